# scripts/lib-packages.sh - shared by scripts/test.sh and scripts/demo.sh:
# install the Debian packages a script needs, or say exactly how to.
#
# need_packages INSTALL PKG... : for every PKG not installed (dpkg status),
# run `apt-get update` once and `apt-get install -y` when INSTALL is 1 and we
# are root; otherwise print the exact command and exit 1.  The command is
# one that runs as printed: Debian 12 installed with a root password has no
# sudo, so without sudo it goes through su (which asks for that password),
# and for root it is apt-get itself.

need_packages() {
	local install=$1
	shift
	local missing=() pkg
	for pkg in "$@"; do
		if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed'; then
			missing+=("$pkg")
		fi
	done
	[ "${#missing[@]}" -eq 0 ] && return 0
	if [ "$install" -eq 1 ] && [ "$(id -u)" -eq 0 ]; then
		echo "== installing: ${missing[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
		return 0
	fi
	echo "missing Debian packages: ${missing[*]}" >&2
	if [ "$(id -u)" -eq 0 ]; then
		echo "run: apt-get update && apt-get install -y ${missing[*]}" >&2
	elif command -v sudo >/dev/null 2>&1; then
		echo "run: sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
	else
		echo "run: su -c 'apt-get update && apt-get install -y ${missing[*]}'" >&2
	fi
	exit 1
}
