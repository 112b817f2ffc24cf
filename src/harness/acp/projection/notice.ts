import { sha256Digest } from "../../../contract/digest.js";
import { cutText } from "../../../contract/text-cut.js";
import { redactText } from "../../redaction.js";
import type { Obj } from "./wire.js";

/** An agent's `notice` update as a `paperclip.provider.notice.v1`; `seq` keeps equal notices apart. */
export function notice(update: Obj, seq: number): Obj {
  const severity = ["info", "warning", "error"].includes(update.severity as string) ? update.severity : "info";
  const summary = cutText(
    redactText([update.title, update.description].filter((s) => typeof s === "string" && s).join(": ")).text,
    4000,
  );
  return {
    schema: "paperclip.provider.notice.v1",
    noticeId: `notice_${sha256Digest(summary).slice(7, 23)}_${seq}`,
    severity,
    category: "acp_notice",
    scope: "session",
    recoverable: severity !== "error",
    userActionable: severity === "error",
    summary,
  };
}
