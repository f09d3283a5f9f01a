#!/usr/bin/env bash
# bench/gpu/build_pg_bundle.sh: builds .dev/pg/pg15-bundle.tar.xz (git-ignored): a relocatable PostgreSQL 15 (Debian 12
# binaries) for pg_e2e.sh, so a GPU machine without PostgreSQL can run headwater.  Layout inside the tarball (mirrors Debian, so the
# binaries find share/ and pkglib/ relative to their own location):
#   hwpg/lib/postgresql/15/bin/{postgres,initdb,pg_ctl,psql,pgbench}
#   hwpg/lib/postgresql/15/lib/   plpgsql, dict_snowball, encoding conversions
#   hwpg/share/postgresql/15/     without man/ and contrib extensions (plpgsql kept)
#   hwpg/syslib/                  sonames newer distros lack (icu 72, ldap 2.5): always used;
#                                 libicudata.so.72 is a LEAN rebuild (icupkg): locale list,
#                                 root/likelySubtags/normalisation data and the ROOT collation
#                                 (initdb opens "und"); no per-language collation tailoring,
#                                 break-iterator, display-name, converter (.cnv), zone data:
#                                 initdb imports ICU collations as usual, each sorts like
#                                 "und" (headwater and pg_e2e.sh use the libc "C" locale)
#   hwpg/syslib/fallback/         other deps: pg_e2e.sh links in only those the machine lacks
# glibc (libc, libm, libdl, libpthread, librt, libresolv, ld-linux), libstdc++
# and libgcc_s are never bundled.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)/.dev/pg
mkdir -p "$here"
st=$(mktemp -d /tmp/hwpg_stage.XXXXXX)
trap 'rm -rf "$st"' EXIT
r=$st/hwpg
bin=$r/lib/postgresql/15/bin pkl=$r/lib/postgresql/15/lib sh=$r/share/postgresql/15
mkdir -p "$bin" "$pkl" "$sh" "$r/syslib/fallback"
for b in postgres initdb pg_ctl psql pgbench; do cp -p /usr/lib/postgresql/15/bin/$b "$bin/"; done
src=/usr/lib/postgresql/15/lib
cp -p $src/plpgsql.so $src/dict_snowball.so $src/*_and_*.so $src/libpqwalreceiver.so $src/pgoutput.so "$pkl/"
(cd /usr/share/postgresql/15 && tar cf - --exclude=./man --exclude=./extension --exclude=./contrib .) | (cd "$sh" && tar xf -)
mkdir -p "$sh/extension" && cp -p /usr/share/postgresql/15/extension/plpgsql* "$sh/extension/"
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libresolv\.so|libutil\.so|libanl\.so|libstdc\+\+\.so|libgcc_s\.so)'
ldd "$bin"/* "$pkl"/*.so 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u |
while read -r so path; do
	[[ $so =~ $skip ]] && continue
	case $so in libicu*.so.72|libldap-2.5.so.0|liblber-2.5.so.0) d=$r/syslib ;; *) d=$r/syslib/fallback ;; esac
	cp -L "$path" "$d/$so"
done
# lean ICU data: the 31 MB data library is 7.4 MB xz'ed, most of the bundle; initdb needs only the root collation
icu=$st/icu; mkdir -p "$icu/lean"
dat=/lib/x86_64-linux-gnu/libicudata.so.72
read -r off size < <(readelf -S -W "$dat" | awk '$2 == ".rodata" {print $5, $6}')
python3 -c "import sys; f=open(sys.argv[1],'rb'); f.seek(int(sys.argv[2],16)); open(sys.argv[4],'wb').write(f.read(int(sys.argv[3],16)))" "$dat" "$off" "$size" "$icu/icudt72l.dat"
icupkg -l "$icu/icudt72l.dat" | grep -E '^(coll|brkitr|zone|unit|curr|lang|region|translit|rbnf)/|\.cnv$|^unames\.icu$|\.spp$|\.cfu$|^zoneinfo64\.res$' \
	| grep -vE '^coll/(root\.res|res_index\.res|ucadata\.icu)$' > "$icu/rm.txt"
icupkg -r "$icu/rm.txt" "$icu/icudt72l.dat" "$icu/lean/icudt72l.dat"
printf '\t.section .note.GNU-stack,"",@progbits\n\t.section .rodata\n\t.balign 16\n\t.globl icudt72_dat\n\t.type icudt72_dat, @object\nicudt72_dat:\n\t.incbin "%s"\n\t.size icudt72_dat, . - icudt72_dat\n' "$icu/lean/icudt72l.dat" > "$icu/icudt.S"
gcc -shared -nostdlib -Wl,-soname,libicudata.so.72 -Wl,-z,noexecstack -o "$r/syslib/libicudata.so.72" "$icu/icudt.S"
strip --strip-unneeded "$r"/syslib/*.so* "$r"/syslib/fallback/*.so* 2>/dev/null || true
{ echo "built $(date -u +%FT%TZ) on $(. /etc/os-release; echo "$PRETTY_NAME"), $(/usr/lib/postgresql/15/bin/postgres -V)";
  (cd "$r" && find . -type f | sort | xargs ls -l | awk '{print $5, $9}'); } > "$r/MANIFEST"
tar -C "$st" -cf - hwpg | xz -9e -T0 > "$here/pg15-bundle.tar.xz.tmp"
mv "$here/pg15-bundle.tar.xz.tmp" "$here/pg15-bundle.tar.xz"
ls -l "$here/pg15-bundle.tar.xz"
