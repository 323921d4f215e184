/*
 * check_suites.h - one Check suite per module of libagile; check_main.c runs
 * them all in one runner so the build ends with one Check summary.
 */
#ifndef CHECK_SUITES_H
#define CHECK_SUITES_H

#include <check.h>

Suite *histogram_suite(void);
Suite *bucket_suite(void);
Suite *config_suite(void);
Suite *controller_suite(void);
Suite *limiter_suite(void);
Suite *stories_suite(void);
Suite *stress_suite(void);
Suite *laws_suite(void);
Suite *adaptx_suite(void);
Suite *resilience_suite(void);
Suite *breaker_suite(void);
Suite *keyed_suite(void);
Suite *clients_suite(void);
Suite *validate_suite(void);

#endif
