// The tabench extension: starts `tabench lsp` (the command in the `tabench.command` setting) for
// .rubric and .policy files and battery.yaml manifests. Highlighting comes from the TextMate
// grammars in syntaxes/, which need no server.
"use strict";

const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const [command, ...args] = vscode.workspace.getConfiguration("tabench").get("command", ["tabench", "lsp"]);
  const server = { command, args };
  client = new LanguageClient(
    "tabench",
    "tabench",
    { run: server, debug: server },
    {
      documentSelector: [
        { scheme: "file", language: "tabench-rubric" },
        { scheme: "file", language: "tabench-policy" },
        { scheme: "file", pattern: "**/battery.yaml" },
      ],
    },
  );
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
