/* check_controller.c - placeholder suite until its module's tests land. */
#include "check_suites.h"

Suite *controller_suite(void)
{
	return suite_create("controller");
}
