# shellcheck shell=bash
# scripts/lib-bench.sh - shared by the benchmarks that measure real programs
# against real servers (bench-overhead, bench-seccomp); sourced after `top`
# and `bench_name` are set.
#
# bench_build TARGET...   build TARGETs in $build (AGILE_BUILDDIR, or build/),
#                         running autoreconf and configure first when needed
# bench_clean_env         no configuration leaks in from the caller's
#                         environment
# free_port               a free TCP port on 127.0.0.1
# wait_for WHAT CMD...    retry CMD for up to 5 s; exit 1 saying WHAT did not
#                         start
# bench_pin PIN           with PIN 1 and two CPUs or more, clients on CPU 0 and
#                         servers on the last (pin_client, pin_server arrays
#                         to put before a command), described in `placement`
# start_nginx DIR         nginx on 127.0.0.1:$http_port (one worker, access
#                         log off, a 3-byte answer), its files in DIR, bounded
#                         by `timeout`, in the background: its pid in
#                         nginx_pid once it answers

build=${AGILE_BUILDDIR:-$top/build}

bench_build() {
	if [ ! -x "$top/configure" ] || [ "$top/configure.ac" -nt "$top/configure" ] ||
	   [ "$top/Makefile.am" -nt "$top/Makefile.in" ]; then
		echo "== autoreconf" >&2
		(cd "$top" && autoreconf -fi >/dev/null)
	fi
	mkdir -p "$build"
	if [ ! -f "$build/Makefile" ] || [ "$top/configure" -nt "$build/Makefile" ]; then
		echo "== configure" >&2
		(cd "$build" && "$top/configure" --enable-werror --quiet)
	fi
	make -C "$build" -j"$(nproc)" "$@" >/dev/null
}

bench_clean_env() {
	local var
	unset LD_PRELOAD AGILE_STRICT AGILE_LOG AGILE_SECCOMP
	for var in $(env | sed -n 's/^\(AGILE_DEST_[A-Za-z0-9_]*\)=.*/\1/p'); do
		unset "$var"
	done
}

free_port() {
	python3 -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

wait_for() {
	local what=$1 i=0
	shift
	until "$@" >/dev/null 2>&1; do
		i=$((i + 1))
		if [ "$i" -gt 100 ]; then
			echo "$bench_name: $what did not start" >&2
			exit 1
		fi
		sleep 0.05
	done
}

bench_pin() {
	local cpus
	cpus=$(nproc)
	pin_client=() pin_server=() placement="placed by the scheduler"
	if [ "$1" -eq 1 ] && [ "$cpus" -ge 2 ]; then
		pin_client=(taskset -c 0)
		pin_server=(taskset -c "$((cpus - 1))")
		placement="clients on CPU 0, servers on CPU $((cpus - 1))"
	fi
}

start_nginx() {
	local dir=$1
	mkdir -p "$dir"
	cat >"$dir/nginx.conf" <<CONF
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $dir/body;
	proxy_temp_path $dir/proxy;
	fastcgi_temp_path $dir/fastcgi;
	uwsgi_temp_path $dir/uwsgi;
	scgi_temp_path $dir/scgi;
	server {
		listen 127.0.0.1:$http_port;
		location / { return 200 "ok\n"; }
	}
}
CONF
	timeout 3600 "${pin_server[@]}" nginx -p "$dir" -c "$dir/nginx.conf" \
		-e "$dir/error.log" </dev/null >/dev/null 2>&1 &
	nginx_pid=$!
	wait_for nginx python3 -c "import urllib.request
urllib.request.urlopen('http://127.0.0.1:$http_port/', timeout=1)"
}
