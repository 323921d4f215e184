/* check_stress.c - placeholder suite until its module's tests land. */
#include "check_suites.h"

Suite *stress_suite(void)
{
	return suite_create("stress");
}
