#!/bin/sh
# The VS Code extension (editors/vscode): its TextMate grammar tokenizes the lexer's keywords,
# fixed snippets and every golden program as expected (test/tokenize.mjs, with vscode-textmate
# and vscode-oniguruma from npm), and `vsce package` builds the extension with its language
# client. npm packages are installed, pinned, into WORK (kept between runs). Exit 77 (skipped)
# where node or npm is missing or the npm registry cannot be reached.
#   vscode_test.sh REPO_ROOT WORK
set -u
root=$1 work=$2
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || { echo "no node/npm: skipped"; exit 77; }
mkdir -p "$work"
npm_install() {  # DIR PACKAGES...
  dir=$1; shift
  timeout 300 npm install --no-audit --no-fund --no-save --prefix "$dir" "$@" >"$work/npm.log" 2>&1
}
if [ ! -d "$work/test/node_modules/vscode-textmate" ]; then
  npm_install "$work/test" vscode-textmate@9.3.2 vscode-oniguruma@2.0.1 ||
    { cat "$work/npm.log"; echo "npm registry unreachable: skipped"; exit 77; }
fi
NODE_PATH="$work/test/node_modules" node "$root/editors/vscode/test/tokenize.mjs" "$root" || exit 1

# Packaging: a copy of the extension with its runtime dependency, then vsce.
pkg="$work/package"
rm -rf "$pkg" && mkdir -p "$pkg" && cp -r "$root/editors/vscode/." "$pkg/"
(cd "$pkg" && timeout 300 npm install --no-audit --no-fund --omit=dev >"$work/npm.log" 2>&1) ||
  { cat "$work/npm.log"; echo "npm registry unreachable: packaging skipped"; exit 77; }
if [ ! -x "$work/vsce/node_modules/.bin/vsce" ]; then
  npm_install "$work/vsce" @vscode/vsce@3.9.2 || { cat "$work/npm.log"; echo "vsce: skipped"; exit 77; }
fi
(cd "$pkg" && "$work/vsce/node_modules/.bin/vsce" package --allow-missing-repository --skip-license \
  -o "$work/spora.vsix" >"$work/vsce.log" 2>&1) || { cat "$work/vsce.log"; exit 1; }
python3 - "$work/spora.vsix" <<'PY'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
for need in ["extension/package.json", "extension/extension.js",
             "extension/syntaxes/spora.tmLanguage.json", "extension/language-configuration.json",
             "extension/node_modules/vscode-languageclient/package.json"]:
    assert need in names, f"{need} not in the package"
assert not any(n.startswith("extension/test/") for n in names), "the tests are packaged"
print(f"spora.vsix: {len(names)} files, grammar, language client and configuration included")
PY
