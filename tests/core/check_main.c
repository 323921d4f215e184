/*
 * check_main.c - runs every libagile suite and exits non-zero when any test
 * fails.  CK_FORK stays at Check's default (fork per test) so one crashing
 * test cannot take the others with it.
 */
#include <stdlib.h>

#include "check_suites.h"

int main(void)
{
	SRunner *runner = srunner_create(histogram_suite());
	srunner_add_suite(runner, bucket_suite());
	srunner_add_suite(runner, config_suite());
	srunner_add_suite(runner, controller_suite());
	srunner_add_suite(runner, limiter_suite());
	srunner_add_suite(runner, stories_suite());
	srunner_add_suite(runner, stress_suite());
	srunner_add_suite(runner, laws_suite());
	srunner_add_suite(runner, adaptx_suite());
	srunner_add_suite(runner, resilience_suite());
	srunner_add_suite(runner, breaker_suite());
	srunner_add_suite(runner, keyed_suite());
	srunner_add_suite(runner, clients_suite());
	srunner_add_suite(runner, validate_suite());
	srunner_run_all(runner, CK_NORMAL);
	int failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
