// Tokenize files with the extension's TextMate grammars, as VS Code does (vscode-textmate on the
// vscode-oniguruma engine), and print every token as JSON:
//   node test/tokenize.js FILE...   ->   {"FILE": [[line, startIndex, endIndex, [scopes...]], ...]}
// Indexes are UTF-16 code units of the line, as in VS Code. tests/integrations/test_vscode_grammar.py
// runs it and checks the scopes against tabench's own parser.
"use strict";

const fs = require("fs");
const path = require("path");
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

const root = path.join(__dirname, "..");
const grammars = {
  "source.tabench-rubric": path.join(root, "syntaxes", "rubric.tmLanguage.json"),
  "source.tabench-policy": path.join(root, "syntaxes", "policy.tmLanguage.json"),
};

async function main(files) {
  const wasm = fs.readFileSync(path.join(path.dirname(require.resolve("vscode-oniguruma")), "onig.wasm"));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new oniguruma.OnigScanner(patterns),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scopeName) => {
      const file = grammars[scopeName];
      return file ? vsctm.parseRawGrammar(fs.readFileSync(file, "utf8"), file) : null;
    },
  });
  const out = {};
  for (const file of files) {
    const scope = file.endsWith(".policy") ? "source.tabench-policy" : "source.tabench-rubric";
    const grammar = await registry.loadGrammar(scope);
    let text = fs.readFileSync(file, "utf8");
    if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
    const tokens = [];
    let state = vsctm.INITIAL;
    text.split(/\r?\n/).forEach((line, number) => {
      const result = grammar.tokenizeLine(line, state);
      for (const token of result.tokens) {
        tokens.push([number + 1, token.startIndex, Math.min(token.endIndex, line.length), token.scopes]);
      }
      state = result.ruleStack;
    });
    out[file] = tokens;
  }
  process.stdout.write(JSON.stringify(out));
}

main(process.argv.slice(2)).catch((error) => {
  process.stderr.write(String(error && error.stack ? error.stack : error) + "\n");
  process.exit(1);
});
