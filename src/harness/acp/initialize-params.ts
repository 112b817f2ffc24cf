import * as acp from "@agentclientprotocol/sdk";

/**
 * What PRP Kit sends as ACP `initialize`, in a run and in `prp agents check` alike: no file
 * system and no terminal (the agent works in its own cwd with its own tools), and form
 * elicitation, since ACP agents may ask questions only when the client says it can show forms.
 */
export const initializeParams = (clientVersion = "0"): acp.InitializeRequest => ({
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: {
    fs: { readTextFile: false, writeTextFile: false },
    terminal: false,
    elicitation: { form: {} },
  },
  clientInfo: { name: "prp-kit", version: clientVersion },
});
