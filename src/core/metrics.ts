/**
 * What the core reports for `/metrics`: events, not series. The core says what happened
 * (a message recorded, a model call finished, an agent passed); the composition root decides how
 * that becomes Prometheus series (`src/ops/metrics.ts`, on prom-client). Keeping names, types
 * and buckets out of the core keeps it free of the exposition format and of any SDK.
 */
import type { ChannelKind, Usage } from './types.js';

/** One model call as the gate saw it, whatever its outcome. */
export interface LlmCallReport {
  purpose: 'turn' | 'summary' | 'selector';
  /** The model asked for (the configured name, so the label values stay few and known). */
  model: string;
  /** 'ok', or the `LlmError` code of the failure. */
  outcome: string;
  /** From the moment the call got its slot to its end. */
  seconds: number;
  /** Seconds from the slot to the first output the provider reported (text, or thinking). */
  firstTokenSeconds?: number | undefined;
  /** Successful calls only. */
  usage?: Usage | undefined;
  /** Estimated cost; null when the model has no known price. */
  costUsd?: number | null | undefined;
}

export interface Metrics {
  /** A human message was recorded and will be answered. */
  messageRecorded(channel: ChannelKind): void;
  /** A round ran to its end (all its turns taken or skipped). */
  roundFinished(seconds: number): void;
  llmCall(report: LlmCallReport): void;
  /** An agent's reply was recorded for delivery. */
  replied(agentId: string): void;
  passed(agentId: string): void;
  /** An agent's turn failed; `reason` is the `LlmError` code. */
  turnFailed(agentId: string, reason: string): void;
}

/**
 * Why a turn can fail (the `LlmError` codes), listed so their counters exist from the start: a
 * rate over a series that appears only with its first failure reads as "no data", not as zero.
 */
export const TURN_FAILURE_REASONS = [
  'timeout', 'rate_limited', 'overloaded', 'auth', 'bad_request', 'model_not_found', 'not_found', 'context_too_long',
  'network', 'server', 'empty', 'unknown_tool', 'aborted', 'unknown',
] as const;

/** Reports nothing: tests and tools that build a router without metrics. */
export const noMetrics: Metrics = {
  messageRecorded() {},
  roundFinished() {},
  llmCall() {},
  replied() {},
  passed() {},
  turnFailed() {},
};
