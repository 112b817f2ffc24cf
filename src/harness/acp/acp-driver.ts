import * as acp from "@agentclientprotocol/sdk";
import { setTimeout as sleep } from "node:timers/promises";
import { GOALS_UNSUPPORTED, type HarnessDriver, type HarnessListener, type SessionOpen } from "../harness-driver.js";
import { whenGone } from "../gone.js";
import type { SupervisedProcess } from "../supervisor.js";
import { DEFAULT_AGENT_IDLE_MS, DEFAULT_HANDSHAKE_MS, type AcpDriverOptions } from "./acp-driver-options.js";
import { AgentAnswers } from "./agent-answers.js";
import { credentialPresence } from "../../agents/credentials.js";
import { agentEnv, launchAgent } from "./agent-process.js";
import { initializeParams } from "./initialize-params.js";
import { outcomeFor, policyAction, questionPolicyAction } from "./permissions.js";
import { AcpProjection, type AcpInput, type ViolationCode } from "./projection.js";
import { modelOffer, modeOffer, type SessionOffer } from "./session-offers.js";
import {
  agentWords,
  authenticationRequired,
  exitedBeforeInitialize,
  exitInWords,
  modelUnavailable,
  startFailure,
  type StartFailure,
} from "./start-failure.js";

export type { AcpDriverOptions } from "./acp-driver-options.js";

type Obj = Record<string, unknown>;
const CANCELLED_PERMISSION = { outcome: { outcome: "cancelled" } };
const CANCELLED_QUESTION = { action: "cancel" };
/** The JSON-RPC error ACP agents answer when they need a login or key. */
const AUTH_REQUIRED = -32000;
const isAuthError = (e: unknown): boolean => (e as { code?: unknown } | null)?.code === AUTH_REQUIRED;

/** One agent process and its ACP connection. */
interface Agent {
  h: SupervisedProcess;
  listener: HarnessListener;
  /** Feeds the projection and passes its facts on, in order. */
  emit(input: AcpInput): void;
  projection: AcpProjection;
  agent: acp.ClientContext;
  connection: acp.ClientConnection;
  initialized: Promise<boolean>;
  session: Promise<boolean> | null;
  prompt: Promise<unknown> | null;
  /** Follow-ups (turn.steer) waiting for the prompt in flight to be answered. */
  followUps: string[];
  /** SDK request handlers (permissions, questions) waiting for an answer. */
  answers: AgentAnswers;
  ending: boolean;
  /** The turn is being cancelled: a request the SDK hands over from now on is answered cancelled at once. */
  cancelled: boolean;
  /** The agent could not start the run (a start_failed fact went out): it is ended at once. */
  failed: boolean;
  /** The driver ended the agent itself after its turn was over (not a crash). */
  endedAfterTurn: boolean;
  /** The prompt is out: the agent must keep saying something (see idleMs). */
  prompting: boolean;
  /** Fires when the prompting agent has been silent too long. */
  idle: NodeJS.Timeout | undefined;
}

/**
 * A harness that speaks the Agent Client Protocol (JSON-RPC 2.0 over the agent's stdio), driven
 * through the official SDK's client app. The agent runs in its own process group under an
 * orphan guard. Every line it writes is read here first (the tap): the projection turns the
 * wire, in order, into PRP facts — including what the SDK would drop silently — and only then
 * does the SDK see it. The client offers no file system and no terminal (`fs: false`,
 * `terminal: false`): the agent works in its own cwd with its own tools.
 */
export class AcpDriver implements HarnessDriver {
  readonly kind = "acp";
  /** ACP has no session goal: whatever the agent or its model, goals are unsupported. */
  readonly sessionGoals = GOALS_UNSUPPORTED;
  readonly command: string;
  private current: Agent | null = null;
  /** The ACP session of the previous agent process: a replacement loads it when it can. */
  private previousSessionId: string | null = null;
  /** Agent processes started so far. */
  private generation = 0;
  /** The turn's prompt: a replacement agent is given it again (the runner restarts a turn without its text). */
  private turnText = "";

  constructor(private readonly options: AcpDriverOptions) {
    this.command = options.command;
  }

  start(listener: HarnessListener): void {
    const o = this.options;
    if (o.unstartable) {
      const { code, message } = o.unstartable;
      // Later: the runner is still carrying out the start when it calls the driver.
      setImmediate(() => listener.fact({ ...startFailure(code, message), noProcess: true }));
      return;
    }
    const projection = new AcpProjection({
      runId: o.runId,
      sessionId: o.sessionId,
      cwd: o.cwd,
      generation: ++this.generation,
      ...(o.identity ? { identity: o.identity } : {}),
      forbidRequests: o.permissionPolicy === "forbid",
    });
    const emit = (input: AcpInput) => {
      for (const fact of projection.project(input)) listener.fact(fact);
    };
    const { h, stream } = launchAgent(o, {
      line: () => this.watchIdle(agent),
      input: emit,
      fact: (fact) => listener.fact(fact),
      overlong: (limit) =>
        this.giveUp(
          agent,
          "agent_line_too_long",
          `the agent is writing a stdout line longer than the ${limit}-byte limit`,
        ),
    });
    emit({ kind: "spawned", pid: h.pid });
    const answers = new AgentAnswers();
    /**
     * The SDK hands a request to its handler after the tap projected it: a controller may have
     * answered already; a request the projection did not open (refused, or the run failing
     * closed) is cancelled at once; otherwise it waits, and the policy answers when it decides.
     */
    const wait = <R>(requestId: unknown, cancelled: R, policy: () => string | null) =>
      answers.wait(
        requestId,
        cancelled,
        () => agent.cancelled || !agent.projection.isOpen(requestId),
        () => {
          this.watchIdle(agent); // the agent waits on the controller: its silence is not its fault
          const action = policy();
          if (action) this.answer(requestId, { action }, "policy");
        },
      );
    const app = acp
      .client({ name: "prp-kit" })
      .onRequest(acp.methods.client.session.requestPermission, ({ params, requestId }) =>
        wait(requestId, CANCELLED_PERMISSION as acp.RequestPermissionResponse, () =>
          policyAction(o.permissionPolicy, params.toolCall.kind),
        ),
      )
      // Rule 4: a form question waits for the controller under `ask`; any other policy cancels it, as an event.
      .onRequest(acp.methods.client.elicitation.create, ({ requestId }) =>
        wait(requestId, CANCELLED_QUESTION as acp.CreateElicitationResponse, () =>
          questionPolicyAction(o.permissionPolicy),
        ),
      )
      .onNotification(acp.methods.client.session.update, () => {}); // projected from the tap, in wire order
    const connection = app.connect(stream);
    const agent: Agent = {
      h,
      listener,
      emit,
      projection,
      agent: connection.agent,
      connection,
      answers,
      session: null,
      prompt: null,
      followUps: [],
      ending: false,
      failed: false,
      cancelled: false,
      endedAfterTurn: false,
      prompting: false,
      idle: undefined,
      initialized: Promise.resolve(false),
    };
    agent.initialized = this.handshake(
      agent,
      "initialize",
      connection.agent.request(acp.methods.agent.initialize, initializeParams(o.clientVersion)),
    ).then(
      (answer) => !projection.broken && this.loggedIn(agent, answer),
      () => false,
    );
    this.current = agent;
    // An agent that closes its stdout and stays can never answer again: only its exit is a clean end of the pipe.
    void h.stdoutEnded
      .then(() => Promise.race([h.exited.then(() => true), sleep(this.settleMs()).then(() => false)]))
      .then((exited) => {
        if (!exited && !agent.ending)
          this.giveUp(
            agent,
            "agent_stdout_closed",
            "the agent closed its stdout but kept running: it can never answer again",
          );
      });
    void whenGone(h, o.graceMs).then((gone) => {
      if (!projection.initializeAnswered && !projection.broken && !agent.ending)
        this.startFailed(agent, exitedBeforeInitialize(gone.exit, gone.log));
      const exit = exitInWords(gone.exit);
      if (agent.projection.sessionId) this.previousSessionId = agent.projection.sessionId;
      emit({ kind: "exited", exit, restartable: !agent.ending && gone.exit.signal !== null });
      agent.prompting = false;
      this.watchIdle(agent);
      connection.close();
      answers.cancelAll();
      if (this.current === agent) this.current = null;
      // Ended by the driver after its turn was over: that is how an ACP agent's run ends, not a failure.
      listener.gone({
        ...gone,
        ...(agent.endedAfterTurn && !gone.exit.success ? { exit: { ...gone.exit, success: true } } : {}),
        endedByDriver: agent.ending,
      });
    });
  }

  openSession(open: SessionOpen): void {
    const a = this.current;
    if (!a) return;
    a.session = a.initialized.then(async (ok) => {
      if (!ok) return false;
      const canLoad = a.projection.capabilities.loadSession === true;
      // A restarted runner's recorded session is loaded or nothing: a new one would lose the run's work.
      if (open.resumeSessionId !== undefined && !canLoad) {
        a.listener.fact({
          kind: "event",
          eventType: "session.failed",
          payload: {
            code: "load_session_unsupported",
            message: `the agent does not advertise loadSession, so session ${open.resumeSessionId} cannot be loaded`,
            method: "session/load",
          },
        });
        return false;
      }
      const previous = open.resumeSessionId ?? this.previousSessionId;
      const load = open.resume && previous !== null && canLoad;
      try {
        if (load)
          await this.handshake(
            a,
            "session/load",
            a.agent.request(acp.methods.agent.session.load, {
              sessionId: previous,
              cwd: this.options.cwd,
              mcpServers: [],
            }),
          );
        else
          await this.handshake(
            a,
            "session/new",
            a.agent.request(acp.methods.agent.session.new, { cwd: this.options.cwd, mcpServers: [] }),
          );
      } catch (e) {
        // The projection reported the error (session.failed); a missing login also ends the run.
        if (isAuthError(e)) this.startFailed(a, authenticationRequired(this.options.profile));
        return false;
      }
      if (a.projection.sessionId === null) return false;
      if (load) return true;
      if (!(await this.selectModel(a))) return false;
      await this.selectMode(a);
      return true;
    });
  }

  /**
   * With a profile: an agent that advertises auth methods while none of the profile's credential
   * sources is there cannot start a session; the run ends before session/new, saying how to log in.
   */
  private loggedIn(a: Agent, answer: acp.InitializeResponse): boolean {
    const profile = this.options.profile;
    if (!profile || !Array.isArray(answer.authMethods) || answer.authMethods.length === 0) return true;
    const env = agentEnv(this.options);
    if (credentialPresence(profile, env, env.HOME).present) return true;
    this.startFailed(a, authenticationRequired(profile));
    return false;
  }

  /**
   * --agent-model: the new session must offer it, and it is selected before the prompt. An agent
   * that lists no models cannot be checked: the run goes on, and a diagnostic says so.
   */
  private async selectModel(a: Agent): Promise<boolean> {
    const model = this.options.model;
    if (model === undefined) return true;
    const offer = modelOffer(a.projection.opened ?? {});
    if (!offer) {
      this.note(
        a,
        "acp_model_unchecked",
        `the agent lists no models, so the model ${JSON.stringify(model)} could not be checked: the agent uses its own`,
      );
      return true;
    }
    if (!offer.ids.includes(model)) {
      this.startFailed(a, modelUnavailable(model, offer.ids));
      return false;
    }
    if (offer.current === model) return true;
    const refused = await this.select(a, offer, model);
    if (refused === null) return true;
    this.startFailed(
      a,
      startFailure(
        "model_unavailable",
        `the agent offers the model ${JSON.stringify(model)} but did not select it: ${refused}`,
      ),
    );
    return false;
  }

  /** With a profile: the session mode its permission policy maps to, when the session offers it. */
  private async selectMode(a: Agent): Promise<void> {
    const o = this.options;
    const mode = o.profile?.permissionModes[o.permissionPolicy];
    const offer = modeOffer(a.projection.opened ?? {});
    if (!mode || !offer || !offer.ids.includes(mode) || offer.current === mode) return;
    const refused = await this.select(a, offer, mode);
    if (refused !== null)
      this.note(a, "acp_mode_refused", `the agent did not switch to mode ${JSON.stringify(mode)}: ${refused}`);
  }

  /** Selects `id` in the session: null when the agent agreed, else its reason. */
  private async select(a: Agent, offer: SessionOffer, id: string): Promise<string | null> {
    const { method, params } = offer.select(a.projection.sessionId!, id);
    try {
      await this.handshake(a, method, a.agent.request(method, params));
      return null;
    } catch (e) {
      return agentWords((e as Error).message || "no reason given", 400);
    }
  }

  /** The agent cannot start the run: the typed cause goes to the runner, which ends the run; the agent is ended at once. */
  private startFailed(a: Agent, failure: StartFailure): void {
    if (this.current !== a || a.projection.broken || a.failed) return;
    a.failed = true;
    a.prompting = false;
    this.watchIdle(a);
    a.listener.fact(failure);
  }

  startTurn(turn: { turnId: string; text?: string }): void {
    const a = this.current;
    if (!a) return;
    a.emit({ kind: "turn", turnId: turn.turnId });
    if (turn.text !== undefined) this.turnText = turn.text;
    a.prompt = (a.session ?? Promise.resolve(false)).then(async (ok) => {
      if (a.failed) {
        // The run is ending with the agent's start failure: no prompt, and nothing more to say.
      } else if (!ok || a.projection.sessionId === null) {
        a.emit({
          kind: "turn_refused",
          message: "the agent has no session: session/new failed, so the prompt was not sent",
        });
      } else {
        await this.prompt(a, this.turnText);
        // A queued follow-up goes out when the projection held the turn open for it, one prompt each, in order.
        for (let text = a.followUps.shift(); text !== undefined; text = a.followUps.shift()) {
          if (!a.projection.awaitingFollowUp || a.cancelled || a.ending) break;
          await this.prompt(a, text);
        }
      }
      a.followUps.length = 0; // the projection reported what it dropped
      // The turn is over: whatever the agent still waits on is answered cancelled (the projection reported it).
      this.cancelAnswers(a);
      await this.endAfterTurn(a);
    });
  }

  /** One session/prompt in the agent's session; resolves once it is answered (or refused). */
  private async prompt(a: Agent, text: string): Promise<void> {
    const answered = a.agent.request(acp.methods.agent.session.prompt, {
      sessionId: a.projection.sessionId!,
      prompt: [{ type: "text" as const, text }],
    });
    a.prompting = true;
    this.watchIdle(a);
    // Its answer is projected from the tap; a missing login also ends the run.
    await answered.catch((e: unknown) => {
      if (isAuthError(e)) this.startFailed(a, authenticationRequired(this.options.profile));
    });
    a.prompting = false;
    this.watchIdle(a);
  }

  /**
   * turn.steer as a queued follow-up: sent as a session/prompt of its own in the same session
   * once the prompt in flight is answered with end_turn, before the turn completes. A turn that
   * ends otherwise (cancelled, interrupted, failed, the agent gone) drops the queue.
   */
  steer(text: string): void {
    const a = this.current;
    if (!a || !a.prompt || a.ending || a.cancelled) {
      if (a) this.note(a, "acp_follow_up_dropped", "the turn is ending: the follow-up was not sent to the agent");
      return;
    }
    a.followUps.push(text);
    a.emit({ kind: "follow_up" });
  }

  interrupt(reason: string): void {
    const a = this.current;
    if (a) this.cancelTurn(a, "interrupt", reason);
  }

  resolveRequest(requestId: string, resolution: Record<string, unknown>): void {
    const a = this.current;
    if (!a) return;
    const providerId = a.projection.providerRequestId(requestId);
    if (providerId === undefined)
      return this.note(a, "acp_unknown_request", `request.resolve for ${requestId}, which the agent is not waiting on`);
    this.answer(providerId, resolution, "controller");
  }

  /** Answers a permission request or a question the agent is waiting on, and says who decided. */
  private answer(providerId: unknown, resolution: Record<string, unknown>, by: "controller" | "policy"): void {
    const a = this.current;
    if (!a || a.answers.answeredEarly(providerId)) return;
    const response = this.responseFor(a, providerId, resolution);
    if (response === undefined) return;
    if ("error" in response)
      return this.note(a, "acp_resolution_refused", `cannot answer the agent's request: ${response.error}`);
    a.emit({
      kind: "decided",
      providerRequestId: providerId,
      by,
      ...(by === "policy" ? { policy: this.options.permissionPolicy } : {}),
    });
    if (a.answers.deliver(providerId, response)) this.watchIdle(a);
  }

  /** The ACP response a resolution asks for: an outcome for a permission, an action for a question. */
  private responseFor(
    a: Agent,
    providerId: unknown,
    resolution: Record<string, unknown>,
  ): Obj | { error: string } | undefined {
    const options = a.projection.permissionOptions(providerId);
    if (options) {
      const outcome = outcomeFor(resolution, options);
      return "error" in outcome ? outcome : { outcome };
    }
    return a.projection.questionAnswer(providerId, resolution);
  }

  stop(): void {
    const a = this.current;
    if (!a) return;
    // A broken agent is not asked to settle anything: it is ended at once.
    if (a.prompt && !a.ending && !a.projection.broken && !a.failed) {
      this.cancelTurn(a, "cancel", "runner");
      void sleep(this.settleMs()).then(() => a.h.terminate());
    } else {
      void a.h.terminate();
    }
  }

  pause(): void {
    this.current?.h.pause();
  }

  resume(): void {
    this.current?.h.resume();
  }

  /** session/cancel, then every open request answered cancelled (ACP requires it for permissions; questions are cancelled alike). */
  private cancelTurn(a: Agent, why: "interrupt" | "cancel", reason: string): void {
    if (!a.prompt || a.ending || !a.projection.sessionId) return;
    a.emit({ kind: "cancelling", why, reason });
    a.cancelled = true;
    void a.agent.notify(acp.methods.agent.session.cancel, { sessionId: a.projection.sessionId }).catch(() => {});
    this.cancelAnswers(a);
    // An agent that does not answer the cancelled prompt is ended after the settle time: the
    // driver's own signal, so not a crash to restart.
    void sleep(this.settleMs()).then(() => {
      if (a.ending) return;
      a.ending = true;
      void a.h.terminate();
    });
  }

  /** Every request the agent waits on is answered cancelled. */
  private cancelAnswers(a: Agent): void {
    a.answers.cancelAll();
    this.watchIdle(a);
  }

  /** `request` must be answered within handshakeMs, or the driver gives up on the agent. */
  private handshake<T>(a: Agent, method: string, request: Promise<T>): Promise<T> {
    const ms = this.options.handshakeMs ?? DEFAULT_HANDSHAKE_MS;
    const timer = setTimeout(
      () => this.giveUp(a, "agent_timeout", `the agent did not answer ${method} within ${ms} ms`),
      ms,
    );
    return request.finally(() => clearTimeout(timer));
  }

  /**
   * (Re)starts the prompt's idle deadline — on every line the agent writes and whenever what it
   * waits on changes — and stops it when the prompt is over, the agent is ending, or it waits
   * on the controller.
   */
  private watchIdle(a: Agent): void {
    clearTimeout(a.idle);
    a.idle = undefined;
    if (!a.prompting || a.ending || a.answers.size > 0) return;
    const ms = this.options.idleMs ?? DEFAULT_AGENT_IDLE_MS;
    a.idle = setTimeout(
      () =>
        this.giveUp(a, "agent_timeout", `the agent sent nothing for ${ms} ms during session/prompt (--agent-idle-ms)`),
      ms,
    );
  }

  /** The agent cannot be worked with any more: the run fails closed with a typed reason, and the runner ends the agent. */
  private giveUp(a: Agent, code: ViolationCode, message: string): void {
    if (this.current !== a || a.projection.broken) return;
    a.prompting = false;
    this.watchIdle(a);
    a.emit({ kind: "broken", code, message });
  }

  /** The turn is over: session/close when the agent offers it, end of stdin, and the group ends. */
  private async endAfterTurn(a: Agent): Promise<void> {
    if (a.ending) return;
    a.ending = true;
    const sessionId = a.projection.sessionId;
    const caps = a.projection.capabilities.sessionCapabilities as Obj | undefined;
    if (sessionId && caps?.close) {
      await Promise.race([
        a.agent.request(acp.methods.agent.session.close, { sessionId }).catch(() => undefined),
        sleep(this.settleMs()),
      ]);
    }
    a.h.closeStdin();
    await Promise.race([a.h.exited, sleep(this.settleMs())]);
    a.endedAfterTurn = true;
    await a.h.terminate();
  }

  private settleMs(): number {
    return this.options.settleMs ?? 2_000;
  }

  private note(a: Agent, code: string, message: string): void {
    a.listener.fact({ kind: "event", eventType: "harness.diagnostic", payload: { code, message } });
  }
}
