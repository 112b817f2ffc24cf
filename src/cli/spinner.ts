/** A one-character spinner on a terminal while the run waits; silent when not on a TTY. */
export class Spinner {
  private timer: NodeJS.Timeout | null = null;
  private frame = 0;
  private shown = false;

  constructor(private readonly tty: NodeJS.WriteStream | null) {}

  start(): void {
    if (!this.tty || this.timer) return;
    this.timer = setInterval(() => {
      this.tty!.write(`\r${"|/-\\"[this.frame++ % 4]} waiting…`);
      this.shown = true;
    }, 120);
    this.timer.unref();
  }

  /** Removes the spinner line so the next output starts clean; keeps spinning. */
  clear(): void {
    if (this.shown && this.tty) this.tty.write("\r\x1b[2K");
    this.shown = false;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    this.clear();
  }
}
