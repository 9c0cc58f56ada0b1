#!/usr/bin/env bash
# The model pipeline of CI (docs/model_repository.md): for each version of the example model
# repository (models/repo) that changed, or every version with --all, `voxrt deploy` in a scratch
# copy of the repository: build the engine for this machine, warm it up, run its gates (build.json),
# publish. Any failed step fails the script, so a model that regresses never lands.
#   scripts/model-ci.sh --all                 every version (what scripts/test.sh runs)
#   scripts/model-ci.sh --base origin/main    only versions changed since that commit
#   VOXRT=build/bin/voxrt REPO=models/repo    (defaults)
# The accuracy gates read models/repo/eval/manifest.tsv, made here from the sentences of
# models/repo/eval/sentences.txt spoken by espeak-ng (so no audio is committed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
voxrt=${VOXRT:-build/bin/voxrt}
repo=${REPO:-models/repo}
mode=all
base=""
while [ $# -gt 0 ]; do
  case "$1" in
    --all) mode=all ;;
    --base) mode=changed; base="$2"; shift ;;
    *) echo "model-ci: unknown argument '$1' (expected --all or --base REF)" >&2; exit 2 ;;
  esac
  shift
done
[ -x "$voxrt" ] || { echo "model-ci: no $voxrt (build first)" >&2; exit 1; }

versions=()
if [ "$mode" = all ]; then
  for dir in "$repo"/*/[0-9]*/; do versions+=("$(basename "$(dirname "$dir")")/$(basename "$dir")"); done
else
  while read -r path; do
    rel=${path#"$repo"/}
    name=${rel%%/*}; rest=${rel#*/}; version=${rest%%/*}
    [[ "$version" =~ ^[0-9]+$ ]] && versions+=("$name/$version")
  done < <(git diff --name-only "$base" -- "$repo" | sort -u)
  # A changed source model behind a link (models/default/model.onnx) changes the versions using it.
  for dir in "$repo"/*/[0-9]*/; do
    target=$(readlink -f "$dir/model.onnx" 2>/dev/null || true)
    if [ -n "$target" ] && [ -n "$(git diff --name-only "$base" -- "${target#"$root"/}")" ]; then
      versions+=("$(basename "$(dirname "$dir")")/$(basename "$dir")")
    fi
  done
fi
mapfile -t versions < <(printf '%s\n' "${versions[@]}" | sort -u | grep -v '^$' || true)
if [ ${#versions[@]} -eq 0 ]; then
  echo "model-ci: no model version changed"
  exit 0
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cp -rL "$repo" "$scratch/repo"
# The accuracy gates' audio: each sentence spoken by espeak-ng, 16 kHz mono.
mkdir -p "$scratch/repo/eval"
: > "$scratch/repo/eval/manifest.tsv"
i=0
while read -r sentence; do
  [ -n "$sentence" ] || continue
  wav="$scratch/repo/eval/clip$i.wav"
  espeak-ng -s 150 -w "$scratch/raw.wav" "$sentence"
  sox "$scratch/raw.wav" -r 16000 -c 1 -b 16 "$wav" pad 0.3 0.8
  printf '%s\t%s\n' "clip$i.wav" "$sentence" >> "$scratch/repo/eval/manifest.tsv"
  i=$((i + 1))
done < "$repo/eval/sentences.txt"

failed=0
for v in "${versions[@]}"; do
  name=${v%/*}
  version=${v#*/}
  echo "== model-ci: $name version $version"
  if ! "$voxrt" deploy "$name" --repo "$scratch/repo" --version "$version"; then
    echo "model-ci: $name version $version FAILED (see the step above)" >&2
    failed=1
  fi
done
exit $failed
