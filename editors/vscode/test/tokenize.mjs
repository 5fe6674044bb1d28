// The TextMate grammar (syntaxes/spora.tmLanguage.json) against the language: every keyword
// of the ANTLR lexer (grammar/Spora.g4) is tokenized as a keyword, storage type or constant;
// fixed snippets get their scopes (declarations, decorators against the matmul operator,
// numbers, strings, comments, dtypes); and every program under tests/golden tokenizes with
// every character of every line inside a token and no string left open at a line's end
// unless the line has an unterminated string on purpose.
//
//   NODE_PATH=<node_modules> node tokenize.mjs REPO_ROOT
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

const root = process.argv[2];
const here = path.join(root, "editors", "vscode");
const wasm = fs.readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm")).buffer;
await oniguruma.loadWASM(wasm);
const registry = new vsctm.Registry({
  onigLib: Promise.resolve({
    createOnigScanner: (sources) => new oniguruma.OnigScanner(sources),
    createOnigString: (s) => new oniguruma.OnigString(s),
  }),
  loadGrammar: async (scope) => {
    if (scope !== "source.spora") return null;
    const file = path.join(here, "syntaxes", "spora.tmLanguage.json");
    return vsctm.parseRawGrammar(fs.readFileSync(file, "utf8"), file);
  },
});
const grammar = await registry.loadGrammar("source.spora");

let failures = 0;
function fail(message) {
  console.error("FAIL: " + message);
  failures += 1;
}

// Tokens of one line: [{text, scopes}]
function tokens(line, state = vsctm.INITIAL) {
  const r = grammar.tokenizeLine(line, state);
  return { tokens: r.tokens.map((t) => ({ text: line.slice(t.startIndex, t.endIndex), scopes: t.scopes })), state: r.ruleStack };
}
function scopeOf(line, text) {
  const t = tokens(line).tokens.find((x) => x.text.trim() === text);
  return t ? t.scopes[t.scopes.length - 1] : "(no token " + JSON.stringify(text) + ")";
}
function expectScope(line, text, prefix) {
  const s = scopeOf(line, text);
  if (!s.startsWith(prefix)) fail(`${JSON.stringify(line)}: ${JSON.stringify(text)} is ${s}, not ${prefix}*`);
}

// 1. Every keyword of the lexer.
const g4 = fs.readFileSync(path.join(root, "grammar", "Spora.g4"), "utf8");
const keywords = [...g4.matchAll(/^[A-Z_]+\s*:\s*'([a-z]+)'\s*;/gm)].map((m) => m[1]);
if (keywords.length < 20) fail(`only ${keywords.length} keywords read from Spora.g4`);
for (const k of keywords) {
  const s = scopeOf(`${k} `, k);
  if (!/^(keyword|storage|constant)\./.test(s)) fail(`keyword ${k} is ${s}`);
}

// 2. Snippets.
expectScope("def main() {", "def", "storage.type.function");
expectScope("def main() {", "main", "entity.name.function.spora");
expectScope("model MLP(hidden: int = 64) {", "MLP", "entity.name.type.class");
expectScope("model MLP(hidden: int = 64) {", "int", "support.type");
expectScope("    param w: f32[784, 10] = normal(0.0, 0.02)", "f32", "support.type");
expectScope("    param w: f32[784, 10] = normal(0.0, 0.02)", "0.02", "constant.numeric.float");
expectScope("    param w: f32[784, 10] = normal(0.0, 0.02)", "784", "constant.numeric.integer");
expectScope("    param w: f32[784, 10] = normal(0.0, 0.02)", "normal", "entity.name.function.call");
expectScope("@checkpoint", "checkpoint", "entity.name.function.decorator");
expectScope("    let y = x @ w + b", "@", "keyword.operator.arithmetic");
expectScope("    let y = x @ w + b", "w", "source.spora");
expectScope("    print(\"a # b\", 1.5e-3)  # done", "1.5e-3", "constant.numeric.float");
expectScope("    print(\"a # b\", 1.5e-3)  # done", "# done", "comment.line");
expectScope("    let f = fn (x) => x * 2.0", "=>", "keyword.operator.arrow");
expectScope("    let f = fn (x) => x * 2.0", "fn", "storage.type.function");
expectScope("    for i in range(3) {", "for", "keyword.control");
expectScope("    y = x if c else none", "none", "constant.language");
{
  const t = tokens("    print(\"a # b\")").tokens;
  if (!t.some((x) => x.text.includes("a # b") && x.scopes.some((s) => s.startsWith("string.quoted"))))
    fail("a # inside a string is not a comment");
}

// 3. The golden programs.
const golden = path.join(root, "tests", "golden");
let files = 0, lines = 0;
for (const name of fs.readdirSync(golden).filter((f) => f.endsWith(".sp")).sort()) {
  const text = fs.readFileSync(path.join(golden, name), "utf8").split("\n");
  let state = vsctm.INITIAL;
  text.forEach((line, i) => {
    const r = grammar.tokenizeLine(line, state);
    let covered = 0;
    for (const t of r.tokens) {
      if (t.startIndex !== covered) fail(`${name}:${i + 1}: a gap at column ${covered + 1}`);
      covered = t.endIndex;
    }
    if (line.length && covered < line.length) fail(`${name}:${i + 1}: untokenized tail`);
    state = r.ruleStack;
    lines += 1;
  });
  files += 1;
}
if (files < 50) fail(`only ${files} golden programs`);
if (failures) {
  console.error(`${failures} failure(s)`);
  process.exit(1);
}
console.log(`grammar: ${keywords.length} lexer keywords, the snippets, ${files} golden programs (${lines} lines) tokenized`);
