/* check_bucket.c - placeholder suite until its module's tests land. */
#include "check_suites.h"

Suite *bucket_suite(void)
{
	return suite_create("bucket");
}
