/*
 * check_rules_resilience.c - the Check tests of
 * src/common/rules_resilience.c: the resilience keys and the listener's
 * keys: each one's values, defaults and one-line errors, and what they say
 * together (rules_checks.c).
 */
#include "config.h"

#include "check_rules.h"

START_TEST(resilience_values)
{
	const struct agile_resilience_config *c = &rule.resilience;

	parse_ok("127.0.0.1:80 max=5 concurrency=4 acquire_timeout=2s "
	         "breaker=sre breaker_k=2 breaker_protection=3 "
	         "breaker_window=5s quota=1000/1d,align window=20/1m over=wait "
	         "proto=http exclude=/health,/metrics connect_timeout=250ms "
	         "retry=3");
	ck_assert_uint_eq(c->conc_mode, AGILE_CONC_FIXED);
	ck_assert_int_eq(c->conc_limit, 4);
	ck_assert_int_eq(c->acquire_timeout_ns, 2 * AGILE_NS_PER_S);
	ck_assert_uint_eq(c->breaker, 1);
	ck_assert(c->breaker_k == 2.0 && c->breaker_protection == 3.0);
	ck_assert_int_eq(c->breaker_window_ns, 5 * AGILE_NS_PER_S);
	ck_assert_int_eq(c->quota, 1000);
	ck_assert_int_eq(c->quota_period_ns, 86400 * AGILE_NS_PER_S);
	ck_assert_uint_eq(c->quota_align, 1);
	ck_assert_int_eq(c->window, 20);
	ck_assert_int_eq(c->window_span_ns, 60 * AGILE_NS_PER_S);
	ck_assert_uint_eq(c->over, AGILE_OVER_WAIT);
	ck_assert_uint_eq(c->proto, AGILE_PROTO_HTTP);
	ck_assert_uint_eq(c->exclude_count, 2);
	ck_assert_str_eq(c->exclude[1], "/metrics");
	ck_assert_int_eq(c->connect_timeout_ns, 250 * AGILE_NS_PER_MS);
	ck_assert_int_eq(c->retry, 3);

	parse_ok("127.0.0.1:6379 max=5 proto=redis");
	ck_assert_uint_eq(c->proto, AGILE_PROTO_REDIS);
	parse_ok("127.0.0.1:5432 max=5 proto=postgres");
	ck_assert_uint_eq(c->proto, AGILE_PROTO_POSTGRES);
	parse_ok("127.0.0.1:5432 max=5 proto=none");
	ck_assert_uint_eq(c->proto, AGILE_PROTO_NONE);
	parse_ok("127.0.0.1:3306 max=5 proto=mysql");
	ck_assert_uint_eq(c->proto, AGILE_PROTO_MYSQL);
	parse_ok("127.0.0.1:11211 max=5 proto=memcached");
	ck_assert_uint_eq(c->proto, AGILE_PROTO_MEMCACHED);

	parse_ok("127.0.0.1:80 max=5 concurrency=adaptive,law=vegas "
	         "quota=20/s window=5/h");
	ck_assert_uint_eq(c->conc_mode, AGILE_CONC_ADAPTIVE);
	ck_assert_uint_eq(c->conc_law, AGILE_LAW_VEGAS);
	ck_assert_int_eq(c->quota_period_ns, AGILE_NS_PER_S);
	ck_assert_uint_eq(c->quota_align, 0);
	ck_assert_int_eq(c->window_span_ns, 3600 * AGILE_NS_PER_S);
	ck_assert(c->breaker_protection < 0); /* unset: the preset's */

	parse_ok("10.0.0.0/8:443 max=5 key_rate=2.5 keys=100");
	ck_assert(c->key_rate == 2.5);
	ck_assert_int_eq(c->keys, 100);
}
END_TEST

START_TEST(resilience_errors)
{
	ck_assert_only_message("127.0.0.1:80 max=5 concurrency=0",
	                       "AGILE_DEST_API: key \"concurrency\": \"0\" is not "
	                       "valid; expected a whole number of connections "
	                       "from 1 to 1024, or adaptive[,law=agile|aimd|"
	                       "vegas|gradient]");
	ck_assert_uint_eq(rule.resilience.conc_mode, AGILE_CONC_OFF);
	ck_assert(rule.enabled);
	/* A misspelt law is named, with the laws there are. */
	ck_assert_only_message("127.0.0.1:80 max=5 concurrency=adaptive,law=x",
	                       "AGILE_DEST_API: key \"concurrency\": law \"x\" "
	                       "is not known; expected agile, aimd, vegas or "
	                       "gradient");
	ck_assert_uint_eq(rule.resilience.conc_mode, AGILE_CONC_OFF);
	ck_assert_only_message("127.0.0.1:80 max=5 law=aimd",
	                       "AGILE_DEST_API: key \"law\" applies to "
	                       "AGILE_LISTEN_ variables only; it is ignored here");
	ck_assert_only_message("127.0.0.1:80 max=5 quota=1000",
	                       "AGILE_DEST_API: key \"quota\": \"1000\" is not "
	                       "valid; expected N/PERIOD[,align] such as 1000/1d "
	                       "or 20/s,align");
	ck_assert_int_eq(rule.resilience.quota, 0);
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 quota=10/1d,aligned"), 1);
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 window=5000/1m"), 1);
	ck_assert_said("with N from 1 to 2048");
	ck_assert_only_message("127.0.0.1:80 max=5 breaker=on",
	                       "AGILE_DEST_API: key \"breaker\": \"on\" is not "
	                       "valid; expected sre");
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 breaker_k=0.5"), 1);
	ck_assert_only_message("127.0.0.1:80 max=5 connect_timeout=5",
	                       "AGILE_DEST_API: key \"connect_timeout\": \"5\" has "
	                       "no unit; expected a duration such as 250us, 200ms "
	                       "or 1.5s");
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 retry=500"), 1);
	ck_assert_said("key \"retry\": \"500\" is too large");
	ck_assert_only_message("127.0.0.1:80 max=5 exclude=health",
	                       "AGILE_DEST_API: key \"exclude\": \"health\" is not "
	                       "valid; expected a comma-separated list of at most "
	                       "8 paths such as /health,/metrics, each at most 47 "
	                       "characters");
	/* A path of 48 characters does not fit its slot. */
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 proto=http exclude=/"
	                       "12345678901234567890123456789012345678901234567"),
	                 1);
	ck_assert_said("each at most 47 characters");
	parse_ok("127.0.0.1:80 max=5 proto=http exclude=/"
	         "1234567890123456789012345678901234567890123456");
	/* A trailing comma is an empty path, not a list of one. */
	ck_assert_only_message("127.0.0.1:80 max=5 proto=http exclude=/a,",
	                       "AGILE_DEST_API: key \"exclude\": \"/a,\" is not "
	                       "valid; expected a comma-separated list of at most "
	                       "8 paths such as /health,/metrics, each at most 47 "
	                       "characters");
	ck_assert_uint_eq(rule.resilience.exclude_count, 0);
	ck_assert_only_message("127.0.0.1:80 max=5 proto=http exclude=/h "
	                       "over=later",
	                       "AGILE_DEST_API: key \"over\": \"later\" is not "
	                       "valid; expected refuse or wait");
	ck_assert_only_message("127.0.0.1:80 max=5 key_rate=1",
	                       "AGILE_DEST_API: key \"key_rate\" applies to a CIDR "
	                       "or * rule; expected a destination such as "
	                       "10.0.0.0/8:443 or *:443");
	ck_assert_only_message("127.0.0.1:80 max=5 exclude=/h",
	                       "AGILE_DEST_API: key \"exclude\" has no effect "
	                       "without proto=http; expected proto=http as well");
	ck_assert_only_message("127.0.0.1:80 max=5 proto=redis exclude=/h",
	                       "AGILE_DEST_API: key \"exclude\" has no effect "
	                       "without proto=http; expected proto=http as well");
	ck_assert_only_message("127.0.0.1:80 max=5 proto=smtp",
	                       "AGILE_DEST_API: key \"proto\": \"smtp\" is not "
	                       "valid; expected http, grpc, redis, postgres, "
	                       "mysql, memcached or none");
	ck_assert_only_message("127.0.0.1:80 max=5 shed=cpu",
	                       "AGILE_DEST_API: key \"shed\" applies to "
	                       "AGILE_LISTEN_ variables only; it is ignored here");
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 concurency=4"), 1);
	ck_assert_said("did you mean \"concurrency\"?");
}
END_TEST

START_TEST(listen_rules)
{
	char *envp[] = {
		"AGILE_LISTEN_WEB=:8080 max=500 slo=200ms shed=cpu "
		"shed_response=503 retry_after=2s proto=http exclude=/health",
		"AGILE_DEST_API=127.0.0.1:8080 max=5",
		"AGILE_LISTEN_BAD=:8081 max=50 concurrency=4",
		NULL,
	};
	const struct agile_rule *web;

	ck_assert_int_eq(parse_env(envp), 1);
	ck_assert_said("AGILE_LISTEN_BAD: key \"concurrency\" applies to "
	               "AGILE_DEST_ variables only; it is ignored here");
	web = &rules.rule[rule_named("web")];
	ck_assert(web->inbound && web->enabled);
	ck_assert_int_eq(web->port, 8080);
	ck_assert_int_eq(web->prefix.prefix_len, 0);
	ck_assert_uint_eq(web->resilience.shed_cpu, 1);
	ck_assert_uint_eq(web->resilience.shed_response, AGILE_SHED_HTTP);
	ck_assert_int_eq(web->resilience.shed_status, 503);
	ck_assert_int_eq(web->resilience.retry_after_ns, 2 * AGILE_NS_PER_S);
	/* A connect to port 8080 matches the destination, never the
	 * listener; a listening socket's address matches the listener. */
	ck_assert_int_eq(match4("127.0.0.1", 8080), rule_named("api"));
	ck_assert_int_eq(match4("10.1.2.3", 8080), -1);
	inet4("127.0.0.1", 8080);
	ck_assert_int_eq(agile__rules_match_listen(&rules,
	                                          (struct sockaddr *)&ss,
	                                          sizeof(struct sockaddr_in)),
	                 rule_named("web"));
	ck_assert_int_eq(agile__listen_parse("AGILE_LISTEN_X", "x",
	                                    ":80 max=5000", &rule, collect,
	                                    &msgs), 1);
	ck_assert_said("expected at most 1024 connections at once");
	/* A goodbye is a client's: proto=redis and proto=postgres mean
	 * nothing to a listener, which is told so and reads no protocol. */
	memset(&msgs, 0, sizeof(msgs));
	ck_assert_int_eq(agile__listen_parse("AGILE_LISTEN_X", "x",
	                                    ":5432 max=50 proto=postgres",
	                                    &rule, collect, &msgs), 1);
	ck_assert_str_eq(msgs.line[0], "AGILE_LISTEN_X: key \"proto\": postgres "
	                 "applies to AGILE_DEST_ variables only; expected http, "
	                 "grpc or none on a listener");
	ck_assert_uint_eq(rule.resilience.proto, AGILE_PROTO_NONE);
	/* A listener with proto=http sheds requests and answers each: 503
	 * unless shed_response= says otherwise, close included, and
	 * retry_after= then needs no shed_response. */
	memset(&msgs, 0, sizeof(msgs));
	ck_assert_int_eq(agile__listen_parse("AGILE_LISTEN_X", "x",
	                                    ":80 max=4 proto=http "
	                                    "retry_after=1s", &rule, collect,
	                                    &msgs), 0);
	ck_assert_uint_eq(rule.resilience.shed_response, AGILE_SHED_HTTP);
	ck_assert_int_eq(rule.resilience.shed_status, 503);
	ck_assert_int_eq(agile__listen_parse("AGILE_LISTEN_X", "x",
	                                    ":80 max=4 proto=http "
	                                    "shed_response=429", &rule, collect,
	                                    &msgs), 0);
	ck_assert_int_eq(rule.resilience.shed_status, 429);
	ck_assert_int_eq(agile__listen_parse("AGILE_LISTEN_X", "x",
	                                    ":80 max=4 proto=http "
	                                    "shed_response=close", &rule,
	                                    collect, &msgs), 0);
	ck_assert_uint_eq(rule.resilience.shed_response, AGILE_SHED_CLOSE);
	ck_assert_int_eq(agile__listen_parse("AGILE_LISTEN_X", "x",
	                                    ":80 max=4", &rule, collect,
	                                    &msgs), 0);
	ck_assert_uint_eq(rule.resilience.shed_response, AGILE_SHED_CLOSE);
	/* proto=grpc is proto=http whose shed HTTP/2 streams are answered
	 * with gRPC's UNAVAILABLE (inbound_h2.c), with the same 503
	 * default. */
	ck_assert_int_eq(agile__listen_parse("AGILE_LISTEN_X", "x",
	                                    ":80 max=4 proto=grpc", &rule,
	                                    collect, &msgs), 0);
	ck_assert_uint_eq(rule.resilience.proto, AGILE_PROTO_HTTP);
	ck_assert_uint_eq(rule.resilience.grpc, 1);
	ck_assert_uint_eq(rule.resilience.shed_response, AGILE_SHED_HTTP);
	ck_assert_int_eq(rule.resilience.shed_status, 503);
	ck_assert_int_eq(agile__listen_parse("AGILE_LISTEN_X", "x",
	                                    ":80 max=4 proto=http", &rule,
	                                    collect, &msgs), 0);
	ck_assert_uint_eq(rule.resilience.grpc, 0);
	ck_assert_int_eq(agile__rule_parse("AGILE_DEST_X", "x",
	                                  "127.0.0.1:80 max=5 proto=grpc",
	                                  &rule, collect, &msgs), 0);
	ck_assert_uint_eq(rule.resilience.proto, AGILE_PROTO_HTTP);
}
END_TEST

/* concurrency_min=, _initial=, _max= and key_rate=R,burst=B: the seed's
 * settings with their defaults, bounds, order and one-line errors. */
START_TEST(seed_knob_keys)
{
	const struct agile_resilience_config *c = &rule.resilience;

	parse_ok("127.0.0.1:80 max=5 concurrency=adaptive concurrency_min=2 "
	         "concurrency_initial=4 concurrency_max=50");
	ck_assert_int_eq(c->conc_min, 2);
	ck_assert_int_eq(c->conc_initial, 4);
	ck_assert_int_eq(c->conc_max, 50);
	/* A max under the default initial of 10 brings the start down. */
	parse_ok("127.0.0.1:80 max=5 concurrency=adaptive concurrency_max=3");
	ck_assert_int_eq(c->conc_initial, 3);
	ck_assert_only_message("127.0.0.1:80 max=5 concurrency=adaptive "
	                       "concurrency_max=1025",
	                       "AGILE_DEST_API: key \"concurrency_max\": "
	                       "\"1025\" is not valid; expected a whole number "
	                       "of connections at once from 1 to 1024 (1000 by "
	                       "default)");
	ck_assert_only_message("127.0.0.1:80 max=5 concurrency=adaptive "
	                       "concurrency_min=0",
	                       "AGILE_DEST_API: key \"concurrency_min\": \"0\" "
	                       "is not valid; expected a whole number of "
	                       "connections at once from 1 to 1024 (1 by "
	                       "default)");
	ck_assert_only_message("127.0.0.1:80 max=5 concurrency=adaptive "
	                       "concurrency_min=20 concurrency_initial=5",
	                       "AGILE_DEST_API: concurrency_min=20, "
	                       "concurrency_initial=5 and concurrency_max=1000 "
	                       "are out of order; expected min <= initial <= max "
	                       "(the defaults stand)");
	ck_assert_int_eq(c->conc_min, 0);
	ck_assert_only_message("127.0.0.1:80 max=5 concurrency=4 "
	                       "concurrency_max=8",
	                       "AGILE_DEST_API: key \"concurrency_max\" has no "
	                       "effect without concurrency=adaptive; expected "
	                       "concurrency=adaptive as well");

	parse_ok("10.0.0.0/8:80 max=5 key_rate=2,burst=8");
	ck_assert(c->key_rate == 2);
	ck_assert(c->key_burst == 8);
	parse_ok("10.0.0.0/8:80 max=5 key_rate=2");
	ck_assert(c->key_burst == 0);
	ck_assert_only_message("10.0.0.0/8:80 max=5 key_rate=2,burst=0",
	                       "AGILE_DEST_API: key \"key_rate\": "
	                       "\"2,burst=0\" is not valid; expected R[,burst=B]: "
	                       "a decimal number of connects per second per "
	                       "address greater than 0, B 1 or more (the rate by "
	                       "default)");
}
END_TEST

/* overload=, unreachable=, ignore=, cache_hit=: read, each status in one
 * list, a status named elsewhere leaving overload's default, and each
 * mistake one line. */
START_TEST(http_verdict_keys)
{
	const struct agile_resilience_config *c = &rule.resilience;

	parse_ok("127.0.0.1:80 max=5 proto=http unreachable=502,504 "
	         "ignore=404,202 cache_hit=X-Cache-Status,Age");
	ck_assert(agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, 502));
	ck_assert(agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, 504));
	ck_assert(!agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, 503));
	ck_assert(agile__http_in_list(c, AGILE_STATUS_IGNORE, 202));
	ck_assert(agile__http_in_list(c, AGILE_STATUS_OVERLOAD, 429));
	ck_assert(agile__http_in_list(c, AGILE_STATUS_OVERLOAD, 503));
	ck_assert_uint_eq(c->cache_hit_count, 2);
	ck_assert_str_eq(c->cache_hit[0], "X-Cache-Status");
	/* Named in unreachable=, 503 leaves overload's default. */
	parse_ok("127.0.0.1:80 max=5 proto=http unreachable=502,503");
	ck_assert(agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, 503));
	ck_assert(!agile__http_in_list(c, AGILE_STATUS_OVERLOAD, 503));
	ck_assert(agile__http_in_list(c, AGILE_STATUS_OVERLOAD, 429));
	parse_ok("127.0.0.1:80 max=5 proto=http overload=none");
	ck_assert(!agile__http_in_list(c, AGILE_STATUS_OVERLOAD, 429));
	parse_ok("127.0.0.1:80 max=5 proto=http");
	ck_assert(agile__http_in_list(c, AGILE_STATUS_OVERLOAD, 503));
	ck_assert(!agile__http_in_list(c, AGILE_STATUS_IGNORE, 404));

	ck_assert_only_message("127.0.0.1:80 max=5 proto=http ignore=4040",
	                       "AGILE_DEST_API: key \"ignore\": \"4040\" is not "
	                       "valid; expected none or a comma-separated list "
	                       "of HTTP statuses from 100 to 599 such as "
	                       "502,504");
	ck_assert_only_message("127.0.0.1:80 max=5 proto=http overload=429,",
	                       "AGILE_DEST_API: key \"overload\": \"429,\" is "
	                       "not valid; expected none or a comma-separated "
	                       "list of HTTP statuses from 100 to 599 such as "
	                       "502,504 (429,503 by default)");
	ck_assert_only_message("127.0.0.1:80 max=5 proto=http "
	                       "overload=429,502 unreachable=502",
	                       "AGILE_DEST_API: key \"unreachable\": 502 is "
	                       "also in overload; expected each status in one "
	                       "list");
	ck_assert(!agile__http_in_list(c, AGILE_STATUS_UNREACHABLE, 502));
	ck_assert_only_message("127.0.0.1:80 max=5 unreachable=502",
	                       "AGILE_DEST_API: key \"unreachable\" has no "
	                       "effect without proto=http; expected proto=http "
	                       "as well");
	ck_assert_only_message("127.0.0.1:80 max=5 proto=http "
	                       "cache_hit=X-Cache,,Age",
	                       "AGILE_DEST_API: key \"cache_hit\": "
	                       "\"X-Cache,,Age\" is not valid; expected a "
	                       "comma-separated list of at most 4 header names "
	                       "such as X-Cache,CF-Cache-Status, each at most 31 "
	                       "characters");
	ck_assert_only_message("127.0.0.1:80 max=5 cache_hit=X-Cache",
	                       "AGILE_DEST_API: key \"cache_hit\" has no effect "
	                       "without proto=http; expected proto=http as "
	                       "well");
	/* A listener takes them too. */
	ck_assert_int_eq(parse_listen(":80 max=8 proto=http ignore=404 "
	                              "cache_hit=X-Hit"), 0);
	ck_assert(agile__http_in_list(c, AGILE_STATUS_IGNORE, 404));
}
END_TEST

/* client_rate=, client_prefix=, client_key=, clients=: read, bounded,
 * and each mistake one line naming the variable, the key and what was
 * expected. */
#define LISTEN_ONLY_MESSAGE(value, expected)                                  \
	do {                                                                  \
		ck_assert_int_eq(parse_listen(value), 1);                     \
		ck_assert_int_eq(msgs.count, 1);                              \
		ck_assert_str_eq(msgs.line[0], expected);                     \
	} while (0)

START_TEST(listen_client_keys)
{
	const struct agile_resilience_config *c = &rule.resilience;

	ck_assert_int_eq(parse_listen(":80 max=8 proto=http client_rate=5 "
	                              "client_prefix=56 "
	                              "client_key=header:X-Api-Key "
	                              "clients=1000"), 0);
	ck_assert(c->client_rate == 5);
	ck_assert(c->client_burst == 0);
	ck_assert_int_eq(c->client_prefix, 56);
	ck_assert_str_eq(c->client_header, "X-Api-Key");
	ck_assert_uint_eq(c->clients, 1000);
	ck_assert_int_eq(parse_listen(":80 max=8 client_rate=0.5,burst=3"), 0);
	ck_assert(c->client_rate == 0.5);
	ck_assert(c->client_burst == 3);
	ck_assert_int_eq(c->client_prefix, 0);
	ck_assert_uint_eq(c->clients, 0);

	LISTEN_ONLY_MESSAGE(":80 max=8 client_rate=0",
	                    "AGILE_LISTEN_WEB: key \"client_rate\": \"0\" is "
	                    "not valid; expected R[,burst=B]: requests per "
	                    "second per client greater than 0, such as 5 or "
	                    "5,burst=10, with B 1 or more");
	LISTEN_ONLY_MESSAGE(":80 max=8 client_rate=5,burst=0.5",
	                    "AGILE_LISTEN_WEB: key \"client_rate\": "
	                    "\"5,burst=0.5\" is not valid; expected "
	                    "R[,burst=B]: requests per second per client "
	                    "greater than 0, such as 5 or 5,burst=10, with B 1 "
	                    "or more");
	LISTEN_ONLY_MESSAGE(":80 max=8 client_rate=5,bust=2",
	                    "AGILE_LISTEN_WEB: key \"client_rate\": "
	                    "\"5,bust=2\" is not valid; expected R[,burst=B]: "
	                    "requests per second per client greater than 0, "
	                    "such as 5 or 5,burst=10, with B 1 or more");
	LISTEN_ONLY_MESSAGE(":80 max=8 client_rate=5 client_prefix=129",
	                    "AGILE_LISTEN_WEB: key \"client_prefix\": \"129\" "
	                    "is not valid; expected the address bits that name "
	                    "one client, from 1 to 128, such as 64 (IPv4 "
	                    "addresses use at most 32)");
	LISTEN_ONLY_MESSAGE(":80 max=8 proto=http client_rate=5 "
	                    "client_key=cookie:id",
	                    "AGILE_LISTEN_WEB: key \"client_key\": \"cookie:id\" "
	                    "is not valid; expected header:NAME, such as "
	                    "header:X-Api-Key, NAME at most 47 characters");
	LISTEN_ONLY_MESSAGE(":80 max=8 proto=http client_rate=5 "
	                    "client_key=header:X(Key)",
	                    "AGILE_LISTEN_WEB: key \"client_key\": "
	                    "\"header:X(Key)\" is not valid; expected "
	                    "header:NAME, such as header:X-Api-Key, NAME at "
	                    "most 47 characters");
	LISTEN_ONLY_MESSAGE(":80 max=8 client_rate=5 clients=1025",
	                    "AGILE_LISTEN_WEB: key \"clients\": \"1025\" is not "
	                    "valid; expected a whole number of clients from 1 "
	                    "to 1024");
	LISTEN_ONLY_MESSAGE(":80 max=8 clients=10",
	                    "AGILE_LISTEN_WEB: key \"clients\" has no effect "
	                    "without client_rate; expected client_rate=R as "
	                    "well");
	LISTEN_ONLY_MESSAGE(":80 max=8 client_rate=5 client_key=header:X-Id",
	                    "AGILE_LISTEN_WEB: key \"client_key\" reads a "
	                    "request header; expected proto=http as well");
	ck_assert_str_eq(c->client_header, "");
	/* A destination has no clients. */
	memset(&msgs, 0, sizeof(msgs));
	ck_assert_int_eq(agile__rule_parse("AGILE_DEST_API", "api",
	                                  "127.0.0.1:80 max=5 client_rate=5",
	                                  &rule, collect, &msgs), 1);
	ck_assert_str_eq(msgs.line[0], "AGILE_DEST_API: key \"client_rate\" "
	                 "applies to AGILE_LISTEN_ variables only; it is "
	                 "ignored here");
}
END_TEST

/* Every keyword value follows the core's rule for preset, anchor and law
 * names: ASCII case is ignored and '_' stands for '-' (breaker=SRE used to
 * be refused while law=AIMD was taken). */
START_TEST(keyword_values_ignore_case)
{
	const struct agile_resilience_config *c = &rule.resilience;

	parse_ok("127.0.0.1:80 max=5 pace=CONNECT breaker=SRE over=Wait "
	         "proto=HTTP quota=10/s,ALIGN concurrency=Adaptive,LAW=Vegas "
	         "preset=Latency_First anchor=SLO slo=100ms");
	ck_assert_int_eq(rule.pace, AGILE_PACE_CONNECT);
	ck_assert_uint_eq(c->breaker, 1);
	ck_assert_uint_eq(c->over, AGILE_OVER_WAIT);
	ck_assert_uint_eq(c->proto, AGILE_PROTO_HTTP);
	ck_assert_uint_eq(c->quota_align, 1);
	ck_assert_uint_eq(c->conc_mode, AGILE_CONC_ADAPTIVE);
	ck_assert_uint_eq(c->conc_law, AGILE_LAW_VEGAS);
	ck_assert_int_eq(rule.config.preset, AGILE_PRESET_LATENCY_FIRST);
	ck_assert_int_eq(rule.config.anchor, AGILE_ANCHOR_SLO);
	parse_ok("127.0.0.1:6379 max=5 pace=Request over=REFUSE proto=Redis");
	ck_assert_int_eq(rule.pace, AGILE_PACE_REQUEST);
	ck_assert_uint_eq(c->over, AGILE_OVER_REFUSE);
	ck_assert_uint_eq(c->proto, AGILE_PROTO_REDIS);
	parse_ok("127.0.0.1:5432 max=5 proto=POSTGRES");
	ck_assert_uint_eq(c->proto, AGILE_PROTO_POSTGRES);
	parse_ok("127.0.0.1:5432 max=5 proto=None");
	ck_assert_uint_eq(c->proto, AGILE_PROTO_NONE);

	ck_assert_int_eq(parse_listen(":8080 max=50 shed=CPU:800 "
	                              "shed_response=Close law=GRADIENT"), 0);
	ck_assert_uint_eq(c->shed_cpu, 1);
	ck_assert_int_eq(c->shed_cpu_permille, 800);
	ck_assert_uint_eq(c->shed_response, AGILE_SHED_CLOSE);
	ck_assert_uint_eq(c->conc_law, AGILE_LAW_GRADIENT);

	/* A different word is still refused, whatever its case. */
	ck_assert_only_message("127.0.0.1:80 max=5 breaker=SREX",
	                       "AGILE_DEST_API: key \"breaker\": \"SREX\" is "
	                       "not valid; expected sre");
}
END_TEST

/* shed=cpu:PERMILLE takes 1 to 999; the message says so. */
START_TEST(listen_shed_values)
{
	ck_assert_int_eq(parse_listen(":8080 max=50 shed=cpu:800"), 0);
	ck_assert_int_eq(rule.resilience.shed_cpu_permille, 800);
	ck_assert_int_eq(parse_listen(":8080 max=50 shed=cpu:1000"), 1);
	ck_assert_str_eq(msgs.line[0],
	                 "AGILE_LISTEN_WEB: key \"shed\": \"cpu:1000\" is not "
	                 "valid; expected cpu or cpu:PERMILLE with PERMILLE from "
	                 "1 to 999, such as cpu:800");
	ck_assert_int_eq(parse_listen(":8080 max=50 shed=cpu:0"), 1);
	ck_assert(rule.enabled);
}
END_TEST

/* The law a clean AGILE_LISTEN_WEB value gives its listener's cap. */
static uint32_t web_law(const char *value)
{
	memset(&msgs, 0, sizeof(msgs));
	ck_assert_int_eq(agile__listen_parse("AGILE_LISTEN_WEB", "web", value,
	                                    &rule, collect, &msgs), 0);
	ck_assert(rule.inbound && rule.enabled);
	return rule.resilience.conc_law;
}

/* A listener's cap is always adaptive; law= picks the law that moves it
 * (the core controller by default). */
START_TEST(listen_law)
{
	ck_assert_uint_eq(web_law(":8080 max=50"), AGILE_LAW_AGILE);
	ck_assert_uint_eq(web_law(":8080 max=50 law=vegas"), AGILE_LAW_VEGAS);
	ck_assert_uint_eq(web_law(":8080 max=50 law=AIMD"), AGILE_LAW_AIMD);
	memset(&msgs, 0, sizeof(msgs));
	ck_assert_int_eq(agile__listen_parse("AGILE_LISTEN_WEB", "web",
	                                    ":8080 max=50 law=fast", &rule,
	                                    collect, &msgs), 1);
	ck_assert_said("AGILE_LISTEN_WEB: key \"law\": \"fast\" is not valid; "
	               "expected agile, aimd, vegas or gradient");
	ck_assert_uint_eq(rule.resilience.conc_law, AGILE_LAW_AGILE);
	ck_assert(rule.enabled);
}
END_TEST

/* inflight=: auto (the default), off, or a gain; what is in force follows
 * the preset and whether the law moves the rate; out of range, a word it
 * does not know and a listener's are refused in one line. */
START_TEST(inflight_key)
{
	parse_ok("127.0.0.1:80 max=300 slo=50ms");
	ck_assert(rule.inflight == AGILE_INFLIGHT_AUTO);
	ck_assert(agile__rule_inflight_gain(&rule) == AGILE_INFLIGHT_DEFAULT_GAIN);
	parse_ok("127.0.0.1:80 max=300 inflight=auto");
	ck_assert(agile__rule_inflight_gain(&rule) == AGILE_INFLIGHT_DEFAULT_GAIN);
	parse_ok("127.0.0.1:80 max=300 inflight=off");
	ck_assert(rule.inflight == AGILE_INFLIGHT_OFF);
	ck_assert(agile__rule_inflight_gain(&rule) == 0);
	parse_ok("127.0.0.1:80 max=300 inflight=1.5");
	ck_assert(agile__rule_inflight_gain(&rule) == 1.5);
	/* auto stays off under the seed's law and at a fixed rate; a gain
	 * given applies there too. */
	parse_ok("127.0.0.1:80 max=300 slo=50ms preset=seed");
	ck_assert(agile__rule_inflight_gain(&rule) == 0);
	parse_ok("127.0.0.1:80 floor=80 max=80");
	ck_assert(agile__rule_inflight_gain(&rule) == 0);
	parse_ok("127.0.0.1:80 floor=80 max=80 inflight=2");
	ck_assert(agile__rule_inflight_gain(&rule) == 2);

	ck_assert_only_message("127.0.0.1:80 max=5 inflight=0",
	                       "AGILE_DEST_API: key \"inflight\": \"0\" is out "
	                       "of range; expected auto, off or a decimal gain "
	                       "greater than 0, at most 100, such as 1.5");
	ck_assert_only_message("127.0.0.1:80 max=5 inflight=101",
	                       "AGILE_DEST_API: key \"inflight\": \"101\" is out "
	                       "of range; expected auto, off or a decimal gain "
	                       "greater than 0, at most 100, such as 1.5");
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 inflight=lots"), 1);
	ck_assert_said("AGILE_DEST_API: key \"inflight\": \"lots\"");
	ck_assert_said("expected auto, off or a decimal gain greater than 0");
	ck_assert_int_eq(parse_listen(":80 max=8 inflight=2"), 1);
	ck_assert_said("inflight");
}
END_TEST

/* An error line that names the key and the value, printed in full so a
 * change of wording shows. */
#define ck_assert_knob_error(value, expected)                                 \
	ck_assert_only_message(value, "AGILE_DEST_API: " expected)

/* baseline_probe=: a duration or off into the controller's configuration,
 * on the agile law's adaptive caps only, and not under the SLO anchor. */
START_TEST(baseline_probe_key)
{
	parse_ok("127.0.0.1:80 max=5 concurrency=adaptive baseline_probe=30s");
	ck_assert_int_eq(rule.config.baseline_probe_ns, 30 * AGILE_NS_PER_S);
	parse_ok("127.0.0.1:80 max=5 concurrency=adaptive baseline_probe=off");
	ck_assert_int_eq(rule.config.baseline_probe_ns,
	                 AGILE_BASELINE_PROBE_OFF);
	ck_assert_int_eq(parse_listen(":8080 max=64 baseline_probe=2m"), 0);
	ck_assert_int_eq(rule.config.baseline_probe_ns, 120 * AGILE_NS_PER_S);
	/* off and 0s say nothing against the SLO anchor: the default. */
	ck_assert_int_eq(parse_listen(":8080 max=64 slo=50ms "
	                              "baseline_probe=off"), 0);
	ck_assert_knob_error("127.0.0.1:80 max=5 concurrency=adaptive "
	                     "baseline_probe=soon",
	                     "key \"baseline_probe\": \"soon\" is not a "
	                     "duration; expected off or a duration such as 60s "
	                     "(0s for the default)");
	ck_assert_knob_error("127.0.0.1:80 max=5 baseline_probe=60s",
	                     "key \"baseline_probe\" has no effect without an "
	                     "adaptive cap; expected concurrency=adaptive as "
	                     "well");
	ck_assert_knob_error("127.0.0.1:80 max=5 concurrency=adaptive,law=aimd "
	                     "baseline_probe=60s",
	                     "key \"baseline_probe\" has no effect with a "
	                     "windowed law; expected law=agile (the default)");
	ck_assert_knob_error("127.0.0.1:80 max=5 concurrency=adaptive slo=50ms "
	                     "baseline_probe=60s",
	                     "key \"baseline_probe\" has no effect under the "
	                     "slo anchor, whose window is 0.8 x slo; expected "
	                     "anchor=baseline as well, or no baseline_probe");
	parse_ok("127.0.0.1:80 max=5 concurrency=adaptive slo=50ms "
	         "anchor=baseline baseline_probe=60s");
}
END_TEST

#define AIMD_RULE "127.0.0.1:80 max=5 concurrency=adaptive,law=aimd "

/* The windowed laws' options: each read into its field with its bit of
 * law_given (an option not given keeps adaptx's default), each range
 * refused in one line, and every one of them needs a windowed law. */
START_TEST(law_option_keys)
{
	const struct agile_resilience_config *c = &rule.resilience;

	parse_ok(AIMD_RULE "law_smoothing=0.3 law_increase=2 law_decrease=0.7 "
	         "law_utilization=0.8 law_tolerance=0.2 law_warmup=0 "
	         "law_min_decay=0 law_jitter=0");
	ck_assert_double_eq_tol(c->law_smoothing, 0.3, 1e-12);
	ck_assert(c->law_increase_rate == 2);
	ck_assert_double_eq_tol(c->law_decrease_ratio, 0.7, 1e-12);
	ck_assert_double_eq_tol(c->law_utilization, 0.8, 1e-12);
	ck_assert_double_eq_tol(c->law_tolerance, 0.2, 1e-12);
	ck_assert_int_eq(c->law_warmup_samples, 0);
	ck_assert(c->law_min_latency_decay == 0);
	ck_assert(c->law_jitter == 0);
	ck_assert_uint_eq(c->law_given, 0xff);
	parse_ok(AIMD_RULE "law_jitter=0.5");
	ck_assert_uint_eq(c->law_given, AGILE_LAW_GIVEN_JITTER);
	/* A listener's law takes them too. */
	ck_assert_int_eq(parse_listen(":80 max=8 law=gradient law_tolerance=0.3"),
	                 0);
	ck_assert_double_eq_tol(c->law_tolerance, 0.3, 1e-12);

	ck_assert_knob_error(AIMD_RULE "law_decrease=1",
	                     "key \"law_decrease\": \"1\" is not valid; "
	                     "expected a decimal number greater than 0 and below "
	                     "1 such as 0.5");
	ck_assert_uint_eq(c->law_given, 0);
	ck_assert_knob_error(AIMD_RULE "law_smoothing=0",
	                     "key \"law_smoothing\": \"0\" is not valid; "
	                     "expected a decimal number greater than 0, at most "
	                     "1, such as 0.2");
	ck_assert_knob_error(AIMD_RULE "law_jitter=1.5",
	                     "key \"law_jitter\": \"1.5\" is not valid; "
	                     "expected a decimal number from 0 to 1 such as 0.1");
	ck_assert_knob_error(AIMD_RULE "law_warmup=2.5",
	                     "key \"law_warmup\": \"2.5\" is not a whole number; "
	                     "expected a whole number of samples from 0 to "
	                     "1000000 such as 10");
	ck_assert_knob_error(AIMD_RULE "law_increase=-1",
	                     "key \"law_increase\": \"-1\" is negative; "
	                     "expected a decimal number greater than 0 such as 1");
	ck_assert_knob_error("127.0.0.1:80 max=5 concurrency=adaptive "
	                     "law_utilization=0.5",
	                     "key \"law_utilization\" has no effect without a "
	                     "windowed law; expected concurrency=adaptive,"
	                     "law=aimd (or vegas or gradient) as well");
}
END_TEST

#define BREAKER_RULE "127.0.0.1:80 max=5 breaker=sre "

/* breaker_floor=, breaker_probe=, breaker_buckets=: read, bounded, the
 * floor at most breaker_k, and only with breaker=sre. */
START_TEST(breaker_knob_keys)
{
	const struct agile_resilience_config *c = &rule.resilience;

	parse_ok(BREAKER_RULE "breaker_k=2 breaker_floor=1.8 breaker_probe=3s "
	         "breaker_buckets=128");
	ck_assert_double_eq_tol(c->breaker_floor, 1.8, 1e-12);
	ck_assert_int_eq(c->breaker_probe_ns, 3 * AGILE_NS_PER_S);
	ck_assert_int_eq(c->breaker_buckets, 128);
	ck_assert_knob_error(BREAKER_RULE "breaker_buckets=129",
	                     "key \"breaker_buckets\": \"129\" is not valid; "
	                     "expected a whole number of buckets from 1 to 128");
	ck_assert_knob_error(BREAKER_RULE "breaker_buckets=0",
	                     "key \"breaker_buckets\": \"0\" is not valid; "
	                     "expected a whole number of buckets from 1 to 128");
	ck_assert_knob_error(BREAKER_RULE "breaker_floor=0.5",
	                     "key \"breaker_floor\": \"0.5\" is not valid; "
	                     "expected a decimal number from 1 to breaker_k (1.5 "
	                     "by default), such as 1.1");
	ck_assert_knob_error(BREAKER_RULE "breaker_floor=1.6",
	                     "key \"breaker_floor\": 1.6 is above breaker_k "
	                     "(1.5); expected a floor the weight can decay to "
	                     "(the preset's stands)");
	ck_assert(c->breaker_floor == 0);
	ck_assert_knob_error(BREAKER_RULE "breaker_probe=3",
	                     "key \"breaker_probe\": \"3\" has no unit; expected a "
	                     "duration such as 250us, 200ms or 1.5s");
	ck_assert_knob_error("127.0.0.1:80 max=5 breaker_buckets=4",
	                     "key \"breaker_buckets\" has no effect without "
	                     "breaker=sre; expected breaker=sre as well");
}
END_TEST

#define RETRY_RULE "127.0.0.1:80 max=5 retry=3 "

/* retry_base=, retry_cap=, retry_factor=, retry_jitter=: read, bounded,
 * base <= cap, and only with retry=. */
START_TEST(retry_knob_keys)
{
	const struct agile_resilience_config *c = &rule.resilience;

	parse_ok(RETRY_RULE "retry_base=50ms retry_cap=2s retry_factor=3 "
	         "retry_jitter=decorrelated");
	ck_assert_int_eq(c->retry_base_ns, 50 * AGILE_NS_PER_MS);
	ck_assert_int_eq(c->retry_cap_ns, 2 * AGILE_NS_PER_S);
	ck_assert(c->retry_factor == 3);
	ck_assert_uint_eq(c->retry_jitter, AGILE_JITTER_DECORRELATED + 1);
	parse_ok(RETRY_RULE "retry_jitter=SPREAD:0.5");
	ck_assert_uint_eq(c->retry_jitter, AGILE_JITTER_SPREAD + 1);
	ck_assert(c->retry_spread == 0.5);
	ck_assert_uint_eq(c->knobs_given, AGILE_KNOB_RETRY_SPREAD);
	parse_ok(RETRY_RULE "retry_jitter=rigid");
	ck_assert_uint_eq(c->retry_jitter, AGILE_JITTER_RIGID + 1);

	ck_assert_knob_error(RETRY_RULE "retry_jitter=wobbly",
	                     "key \"retry_jitter\": \"wobbly\" is not valid; "
	                     "expected rigid, full, equal, decorrelated, spread "
	                     "or spread:F with F from 0 to 1, such as "
	                     "spread:0.2");
	ck_assert_knob_error(RETRY_RULE "retry_jitter=spread:2",
	                     "key \"retry_jitter\": \"spread:2\" is not valid; "
	                     "expected rigid, full, equal, decorrelated, spread "
	                     "or spread:F with F from 0 to 1, such as "
	                     "spread:0.2");
	ck_assert_uint_eq(c->retry_jitter, 0);
	ck_assert_knob_error(RETRY_RULE "retry_factor=0.5",
	                     "key \"retry_factor\": \"0.5\" is not valid; "
	                     "expected a decimal number from 1 to 100, such as "
	                     "2");
	ck_assert_knob_error(RETRY_RULE "retry_base=2s",
	                     "retry_base=2s is above retry_cap=1s; expected base "
	                     "<= cap (the preset's stand)");
	ck_assert_int_eq(c->retry_base_ns, 0);
	ck_assert_knob_error("127.0.0.1:80 max=5 retry_cap=5s",
	                     "key \"retry_cap\" has no effect without retry=N; "
	                     "expected retry=N as well");
}
END_TEST

/* shed_window=, shed_buckets=, shed_latency=, shed_cool=, shed_beta=,
 * shed_floor=: listeners only, read, bounded, and only with shed=cpu. */
START_TEST(shed_knob_keys)
{
	const struct agile_resilience_config *c = &rule.resilience;

	ck_assert_int_eq(parse_listen(":80 max=8 shed=cpu shed_window=2s "
	                              "shed_buckets=20 shed_latency=50ms "
	                              "shed_cool=3s shed_beta=0 shed_floor=1"),
	                 0);
	ck_assert_int_eq(c->shed_window_ns, 2 * AGILE_NS_PER_S);
	ck_assert_int_eq(c->shed_buckets, 20);
	ck_assert_int_eq(c->shed_latency_ns, 50 * AGILE_NS_PER_MS);
	ck_assert_int_eq(c->shed_cool_ns, 3 * AGILE_NS_PER_S);
	ck_assert(c->shed_beta == 0);
	ck_assert(c->shed_floor == 1);
	ck_assert_uint_eq(c->knobs_given,
	                  AGILE_KNOB_SHED_BETA | AGILE_KNOB_SHED_FLOOR);

	ck_assert_int_eq(parse_listen(":80 max=8 shed=cpu shed_beta=1.1"), 1);
	ck_assert_str_eq(msgs.line[0], "AGILE_LISTEN_WEB: key \"shed_beta\": "
	                 "\"1.1\" is not valid; expected a decimal number from "
	                 "0 to 1 such as 0.9");
	ck_assert_uint_eq(c->knobs_given, 0);
	ck_assert_int_eq(parse_listen(":80 max=8 shed_cool=2s"), 1);
	ck_assert_str_eq(msgs.line[0], "AGILE_LISTEN_WEB: key \"shed_cool\" has "
	                 "no effect without shed=cpu; expected shed=cpu as well");
	/* A destination has no shedder. */
	ck_assert_int_eq(parse("127.0.0.1:80 max=5 shed_window=1s"), 1);
	ck_assert_said("shed_window");
}
END_TEST

/* The controller's rules a-d: a value, or off. */
START_TEST(controller_rule_keys)
{
	parse_ok("127.0.0.1:80 max=5 slo=100ms delivered_share=0.8 "
	         "knee_ramp=3 probe_acceleration=off goodput_cut=off");
	ck_assert_double_eq_tol(rule.config.delivered_share, 0.8, 1e-12);
	ck_assert(rule.config.knee_ramp == 3);
	ck_assert_uint_eq(rule.config.rules_off,
	                  AGILE_RULE_PROBE | AGILE_RULE_GOODPUT);
	parse_ok("127.0.0.1:80 max=5 slo=100ms delivered_share=OFF");
	ck_assert_uint_eq(rule.config.rules_off, AGILE_RULE_DELIVERED);
	ck_assert_knob_error("127.0.0.1:80 max=5 knee_ramp=maybe",
	                     "key \"knee_ramp\": \"maybe\" is not a number; "
	                     "expected off or a decimal number, 1 or more, such "
	                     "as 2");
	/* Ranges are the core's, in its words with the key's name. */
	ck_assert_knob_error("127.0.0.1:80 max=5 goodput_cut=1.5",
	                     "goodput_cut (1.5) must be at most 1: above it the "
	                     "cut could keep more than the answers that met the "
	                     "target; the preset would decide instead.");
}
END_TEST

/* One error line for each seed knob the tests above leave without one,
 * word for word: a listener's (shed_) keys as AGILE_LISTEN_WEB. */
START_TEST(seed_knob_errors)
{
	static const struct {
		const char *value;
		const char *line;
	} cases[] = {
		{ AIMD_RULE "law_tolerance=2",
		  "AGILE_DEST_API: key \"law_tolerance\": \"2\" is not valid; "
		  "expected a decimal number greater than 0, at most 1, such as "
		  "0.1" },
		{ AIMD_RULE "law_utilization=0",
		  "AGILE_DEST_API: key \"law_utilization\": \"0\" is not valid; "
		  "expected a decimal number greater than 0, at most 1, such as "
		  "0.9" },
		{ AIMD_RULE "law_min_decay=2",
		  "AGILE_DEST_API: key \"law_min_decay\": \"2\" is not valid; "
		  "expected a decimal number from 0 to 1 such as 0.001" },
		{ ":80 max=8 shed=cpu shed_window=5",
		  "AGILE_LISTEN_WEB: key \"shed_window\": \"5\" has no unit; "
		  "expected a duration such as 250us, 200ms or 1.5s" },
		{ ":80 max=8 shed=cpu shed_buckets=0",
		  "AGILE_LISTEN_WEB: key \"shed_buckets\": \"0\" is not valid; "
		  "expected a whole number of buckets from 1 to 128" },
		{ ":80 max=8 shed=cpu shed_latency=0s",
		  "AGILE_LISTEN_WEB: key \"shed_latency\": \"0s\" is not greater "
		  "than 0; expected a duration such as 250us, 200ms or 1.5s" },
		{ ":80 max=8 shed=cpu shed_floor=2",
		  "AGILE_LISTEN_WEB: key \"shed_floor\": \"2\" is not valid; "
		  "expected a decimal number from 0 to 1 such as 0.1" },
		{ RETRY_RULE "retry_cap=0s",
		  "AGILE_DEST_API: key \"retry_cap\": \"0s\" is not greater than "
		  "0; expected a duration such as 250us, 200ms or 1.5s" },
		{ "127.0.0.1:80 max=5 delivered_share=x",
		  "AGILE_DEST_API: key \"delivered_share\": \"x\" is not a number; "
		  "expected off or a decimal number from 0 to 1 such as 0.92 (off "
		  "also turns off knee_ramp and probe_acceleration)" },
		{ "127.0.0.1:80 max=5 delivered_share=1.5",
		  "AGILE_DEST_API: delivered_share (1.5) must be at most 1: a cut "
		  "to more than the downstream delivered keeps the queue growing; "
		  "the preset would decide instead." },
		{ "127.0.0.1:80 max=5 probe_acceleration=0.5",
		  "AGILE_DEST_API: probe_acceleration (0.5) must be at least 1: "
		  "below 1 each increase in a row would be smaller than the last; "
		  "it would be raised to 1, plain additive increase." },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *value = cases[i].value;
		int errors = value[0] == ':' ? parse_listen(value) : parse(value);

		ck_assert_msg(errors == 1 && msgs.count == 1, "%s: %d errors",
		              value, errors);
		ck_assert_str_eq(msgs.line[0], cases[i].line);
	}
}
END_TEST

TCase *rules_resilience_tcase(void)
{
	TCase *tc = tcase_create("resilience");

	tcase_add_test(tc, resilience_values);
	tcase_add_test(tc, keyword_values_ignore_case);
	tcase_add_test(tc, resilience_errors);
	tcase_add_test(tc, listen_rules);
	tcase_add_test(tc, listen_law);
	tcase_add_test(tc, listen_client_keys);
	tcase_add_test(tc, http_verdict_keys);
	tcase_add_test(tc, seed_knob_keys);
	tcase_add_test(tc, law_option_keys);
	tcase_add_test(tc, breaker_knob_keys);
	tcase_add_test(tc, retry_knob_keys);
	tcase_add_test(tc, shed_knob_keys);
	tcase_add_test(tc, controller_rule_keys);
	tcase_add_test(tc, seed_knob_errors);
	tcase_add_test(tc, inflight_key);
	tcase_add_test(tc, baseline_probe_key);
	tcase_add_test(tc, listen_shed_values);
	return tc;
}
