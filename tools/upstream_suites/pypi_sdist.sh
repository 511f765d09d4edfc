#!/usr/bin/env bash
# Unpack one folder of a PyPI sdist, once: pypi_sdist.sh PYTHON NAME VERSION DEST MEMBER
# gives DEST/NAME-VERSION/MEMBER (PYTHON reads PyPI's JSON index).
set -euo pipefail
py=$1 name=$2 version=$3 dest=$4 member=$5
[ -d "$dest/$name-$version/$member" ] && exit 0
mkdir -p "$dest"
url=$(curl -fsS -H "Accept: application/vnd.pypi.simple.v1+json" "https://pypi.org/simple/$name/" |
    "$py" -c 'import json,sys; print([f["url"] for f in json.load(sys.stdin)["files"] if f["filename"]==sys.argv[1]][0])' \
        "$name-$version.tar.gz")
curl -fsS "$url" | tar xz -C "$dest" "$name-$version/$member"
