/* check_config.c - placeholder suite until its module's tests land. */
#include "check_suites.h"

Suite *config_suite(void)
{
	return suite_create("config");
}
