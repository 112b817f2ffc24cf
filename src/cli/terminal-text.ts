// The CLI's name for the rules in the contract layer, where the harness uses them too (stop reasons that quote an agent).
export { printableJson, visible, visibleLines } from "../contract/terminal-text.js";
