/* check_histogram.c - placeholder suite until its module's tests land. */
#include "check_suites.h"

Suite *histogram_suite(void)
{
	return suite_create("histogram");
}
