/* check_stories.c - placeholder suite until its module's tests land. */
#include "check_suites.h"

Suite *stories_suite(void)
{
	return suite_create("stories");
}
