// Starts `spora lsp` (the path is the setting spora.path) as the language server of .sp files.
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const command = vscode.workspace.getConfiguration("spora").get("path") || "spora";
  client = new LanguageClient(
    "spora",
    "Spora",
    { command, args: ["lsp"] },
    { documentSelector: [{ scheme: "file", language: "spora" }] });
  context.subscriptions.push({ dispose: () => client && client.stop() });
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
