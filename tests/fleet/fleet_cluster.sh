#!/bin/sh
# fleet_cluster.sh - a 3-node Redis Cluster holds two fleet destinations.
#
# Three redis-servers on loopback form a cluster (redis-cli --cluster
# create, no replicas).  Two destinations, users (fleet_max=30) and orders
# (fleet_max=20), hash to slots on two different nodes ({agile:users} and
# {agile:orders}), and AGILE_REDIS names the third node, which owns
# neither: every host must follow MOVED to the right node.  Three hosts
# (state files) call both destinations as fast as they may for 5 s; each
# downstream must see its own fleet_max within 10%, no host may fall back,
# and each destination's keys must all sit on the node that owns its slot.
. "${AGILE_SRCDIR:-$(dirname "$0")/../..}/tests/fleet/lib.sh"

nodes=""
for i in 1 2 3; do
	redis_next_port=$(cluster_port)
	start_redis --cluster-enabled yes --cluster-config-file nodes.conf \
		--cluster-node-timeout 5000
	nodes="$nodes $redis_port"
	eval "node$i=$redis_port"
done
# shellcheck disable=SC2046
redis-cli --cluster create $(for p in $nodes; do printf '127.0.0.1:%s ' "$p"; done) \
	--cluster-replicas 0 --cluster-yes >"$tmp/cluster.log" 2>&1 ||
	fail "redis-cli --cluster create failed: $(cat "$tmp/cluster.log")"
for p in $nodes; do
	i=0
	until redis-cli -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok'; do
		i=$((i + 1))
		[ "$i" -le 200 ] || fail "the cluster did not come up on $p"
		sleep 0.05
	done
done
# owner KEY: the port of the node that owns KEY's slot (the others answer
# EXISTS with a MOVED).
owner() {
	for p in $nodes; do
		if redis-cli -p "$p" exists "$1" 2>&1 | grep -qx '[0-9][0-9]*'; then
			echo "$p"
		fi
	done
}
users_node=$(owner '{agile:users}')
orders_node=$(owner '{agile:orders}')
note "cluster on$nodes; {agile:users} on $users_node, {agile:orders} on $orders_node"
[ "$users_node" != "$orders_node" ] || fail "both destinations hash to one node"
for p in $nodes; do
	[ "$p" = "$users_node" ] || [ "$p" = "$orders_node" ] || entry=$p
done

users=$(start_httpd users)
orders=$(start_httpd orders)
export AGILE_REDIS="redis://127.0.0.1:$entry/0"
export AGILE_DEST_USERS="127.0.0.1:$users max=100 floor=100 initial=100 fleet_max=30 redis_timeout=500ms"
export AGILE_DEST_ORDERS="127.0.0.1:$orders max=100 floor=100 initial=100 fleet_max=20 redis_timeout=500ms"

t0=$(now_mono)
for n in 1 2 3; do
	host_bg "$n" "$CLIENT" "$users" 5 2 "$tmp/users$n.json"
	pids="${pids:-} $!"
	host_bg "$n" "$CLIENT" "$orders" 5 2 "$tmp/orders$n.json"
	pids="$pids $!"
done
sleep 3
for p in $nodes; do
	redis-cli -p "$p" --scan --pattern '{agile:*' >"$tmp/keys$p.txt"
done
for p in $pids; do
	wait "$p" || fail "a client failed"
done

u=$(arrivals_between "$tmp/users.arrivals" "$(echo "$t0 + 1" | bc)" "$(echo "$t0 + 4.5" | bc)")
o=$(arrivals_between "$tmp/orders.arrivals" "$(echo "$t0 + 1" | bc)" "$(echo "$t0 + 4.5" | bc)")
note "users saw $u/s (fleet_max 30), orders saw $o/s (fleet_max 20)"
check "27 <= v[0] <= 33" "users holds its fleet_max across the cluster" "$u"
check "18 <= v[0] <= 22" "orders holds its fleet_max across the cluster" "$o"
for p in $nodes; do
	note "node $p holds: $(tr '\n' ' ' <"$tmp/keys$p.txt")"
	if [ "$p" = "$users_node" ]; then
		grep -q '{agile:users}' "$tmp/keys$p.txt" || fail "no users key on $p"
	else
		! grep -q '{agile:users}' "$tmp/keys$p.txt" || fail "a users key on $p"
	fi
	if [ "$p" = "$orders_node" ]; then
		grep -q '{agile:orders}' "$tmp/keys$p.txt" || fail "no orders key on $p"
	else
		! grep -q '{agile:orders}' "$tmp/keys$p.txt" || fail "an orders key on $p"
	fi
done
for n in 1 2 3; do
	for d in users orders; do
		check "v[0] == 0 and v[1] == 3" "host $n, $d: no fallback, three live hosts" \
			"$(host_json "$n" "$d" 'f["fallbacks"]')" "$(host_json "$n" "$d" 'f["hosts"]')"
	done
done
