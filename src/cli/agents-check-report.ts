import type { ProbeReport } from "../agents/probe.js";
import { visible } from "./terminal-text.js";

const WIDTH = 14;

/**
 * A probe report as a few aligned lines, ending with the verdict and, when the agent is not
 * ready, the one line that fixes it. Everything the agent wrote is shown with its control
 * characters visible: it cannot draw a verdict of its own.
 */
export function formatProbeReport(r: ProbeReport): string {
  const rows: [string, string][] = [["agent", r.agent]];
  if (r.command) rows.push(["command", r.command]);
  if (r.protocolVersion !== null) rows.push(["protocol", `ACP ${r.protocolVersion}`]);
  if (r.agentInfo) {
    const { name, title, version } = r.agentInfo;
    rows.push(["agent info", [name, title && title !== name ? `(${title})` : null, version].filter(Boolean).join(" ")]);
  }
  if (r.agentCapabilities) rows.push(["capabilities", capabilityNames(r.agentCapabilities) || "none"]);
  if (r.authMethods)
    rows.push([
      "auth methods",
      r.authMethods.map((m) => (m.name && m.name !== m.id ? `${m.id} (${m.name})` : m.id)).join(", ") || "none",
    ]);
  rows.push([
    "credentials",
    r.credentials.sources.map((s) => `${s.name} ${s.present ? "present" : "absent"}`).join(", ") || "none configured",
  ]);
  if (r.initializeMs !== null) rows.push(["initialize", `${r.initializeMs} ms`]);
  for (const w of r.warnings) rows.push(["warning", w]);
  if (r.verdict === "broken") {
    if (r.exit) rows.push(["exit", r.exit.signal ? `signal ${r.exit.signal}` : `code ${r.exit.exitCode}`]);
    for (const line of r.stderrTail) rows.push(["stderr", line]);
  }
  rows.push(["verdict", r.cause ? `${r.verdict} (${r.cause}): ${r.message}` : `${r.verdict}: ${r.message}`]);
  if (r.fix) rows.push(["fix", r.fix]);
  return rows.map(([label, value]) => `${label.padEnd(WIDTH)}${visible(value)}\n`).join("");
}

/** The capabilities the agent offers: top-level keys whose value is not false or empty. */
function capabilityNames(capabilities: Record<string, unknown>): string {
  return Object.entries(capabilities)
    .filter(([, v]) => v !== false && v !== null && v !== undefined)
    .map(([k]) => k)
    .join(", ");
}
