# Shared by the build scripts in this directory; sourced, never run.
# Each script sets `script` (its name, for errors) before sourcing it.

# module_toolchain MODULE@VERSION prints the Go toolchain that the module's
# go line needs when the local go is older (go1.27.3 for a go 1.27.x line,
# the toolchain Argo CD v3.6 and kustomize v5.8 were checked with here;
# otherwise the go line's own version), and nothing when the local go will
# do. The go command fetches that toolchain from the module proxy once.
module_toolchain() {
  local need
  need=$(cd / && GOTOOLCHAIN=local go mod download -json "$1" 2>/dev/null |
    sed -n 's/.*requires go [^ ]* \([0-9][0-9.]*\) (running go.*/\1/p' | head -n 1)
  case "$need" in
  "") ;;
  1.27.*) echo go1.27.3 ;;
  *) echo "go$need" ;;
  esac
}

# module_dir MODULE@VERSION [TOOLCHAIN] downloads the module from the proxy
# and prints its directory in the module cache, or stops the script.
module_dir() {
  local dir
  dir=$(cd / && GOTOOLCHAIN=${2:-local} go mod download -json "$1" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  if [ -z "$dir" ] || [ ! -f "$dir/go.mod" ]; then
    echo "$script: could not download $1 from the module proxy" >&2
    exit 1
  fi
  echo "$dir"
}
