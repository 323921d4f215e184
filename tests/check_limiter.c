/* check_limiter.c - placeholder suite until its module's tests land. */
#include "check_suites.h"

Suite *limiter_suite(void)
{
	return suite_create("limiter");
}
