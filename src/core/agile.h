/*
 * agile.h - the public interface of libagile, the pure control core of
 * agilepreload.
 *
 * libagile is an adaptive, latency-driven limiter: a leaky bucket (or, for the
 * inbound direction, a semaphore) is the actuator, and a feedback controller
 * fed with round-trip samples decides what rate (or concurrency limit) the
 * actuator runs at.  A static ceiling is enforced twice, in the controller's
 * clamp and in the actuator itself, so no control-law bug can exceed it.
 *
 * Three rules shape every declaration here:
 *
 *  - The core is pure.  It reads no clock, sleeps never, draws no random
 *    numbers and does no I/O.  Every entry point that needs the time takes
 *    `now_ns`, a monotonic time in nanoseconds chosen by the caller, so every
 *    behaviour can be tested exactly on a virtual clock.
 *  - State structs hold no pointers.  A limiter is one fixed-size struct that
 *    can live in a shared-memory file mapped at different addresses by many
 *    processes; hooks (a classify function, a clock) are passed per call.
 *  - Hot-path calls (observe, take, try-take, release) are lock-free: they use
 *    GCC/Clang __atomic builtins on naturally aligned 8-byte fields, which are
 *    address-free and therefore valid across processes sharing the mapping.
 *
 * Functions return 0 or a negative errno value unless documented otherwise.
 * Nothing here prints.
 *
 * This header is the one a program includes.  It holds nothing itself but
 * the parts, each a header of its own, in the order they build on each
 * other:
 *
 *   agile_types.h       units and enumerations
 *   agile_config.h      the configuration, as written and as resolved
 *   agile_bucket.h      the leaky bucket, the rate actuator
 *   agile_histogram.h   the latency histogram
 *   agile_controller.h  the control law
 *   agile_limiter.h     the rate and concurrency limiters, and the check
 *                       of a limiter's body
 *
 * agile_laws.h (adaptx's windowed laws) comes first, as a concurrency
 * limiter can run one; agile_resilience.h, agile_keyed.h, agile_clients.h
 * and agile_adaptx.h are further interfaces a program includes beside
 * this one.
 */
#ifndef AGILE_H
#define AGILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agile_laws.h"

#include "agile_types.h"
#include "agile_config.h"
#include "agile_bucket.h"
#include "agile_histogram.h"
#include "agile_controller.h"
#include "agile_limiter.h"

#endif /* AGILE_H */
