// What one differential case is made of: a config, the tenants, keys and
// budgets an operator sets up, and a timed sequence of requests with the
// origin's scripted answer to each. Plain JSON (names are symbolic: `t0`,
// `kA`), so the model reads it, the harness runs it through the gateway
// under unique names, and a failing case prints as a test to paste.

export type Method = "GET" | "HEAD" | "PUT" | "POST" | "DELETE";
/** Two managed keys, no credential (charged to the address), or a made-up managed key. */
export type Credential = "kA" | "kB" | "anon" | "bogus";
export type TenantName = "t0" | "t1";
export type KeyName = "kA" | "kB";
export type SubjectKind = "key" | "tenant" | "ip";

export interface LimitSpec {
  count: number;
  window_s: number;
  burst?: number;
  /** Tried beside the enforced limits, never refusing (per-policy shadow). */
  shadow?: boolean;
}

export interface ResponseChargeSpec {
  category: string;
  /** The origin's answer names its cost in this header. */
  header: string;
  reserve: number;
}

export interface RouteSpec {
  method?: Method;
  path: string;
  charges?: Record<string, number>;
  charge_on_status?: (number | string)[];
  quota?: "store" | "release";
  response_charge?: ResponseChargeSpec;
}

/** The part of the TOLLGATE config the model reads; the harness adds what only keeps the test quiet and cheap. */
export interface ScenarioConfig {
  mode: "enforce" | "shadow";
  allow_path_parameters?: boolean;
  /** 0: no bound. */
  max_request_bytes?: number;
  categories: Record<string, { limits: Partial<Record<SubjectKind, LimitSpec[]>> }>;
  routes: RouteSpec[];
}

export interface QuotaSpec {
  bytes?: { hard?: number; soft?: number };
  objects?: { hard?: number };
}

export interface TenantSpec {
  name: TenantName;
  org: "o0" | null;
  quota: QuotaSpec | null;
}

export interface KeySpec {
  name: KeyName;
  tenant: TenantName;
}

export type BudgetOwner = { kind: "key"; name: KeyName } | { kind: "tenant"; name: TenantName } | { kind: "org"; name: "o0" };

export interface BudgetSpec {
  owner: BudgetOwner;
  category: string;
  amount: number;
  period: "day" | "month" | "none";
  /** Tried beside the enforced budgets, never refusing (per-policy shadow). */
  shadow?: boolean;
}

/** How the origin answers one request: its status, the cost header's value (null: no header), and how long it waits. */
export interface OriginAnswer {
  status: number;
  cost: number | null;
  delayMs: number;
}

export interface RequestSpec {
  method: Method;
  /** The path as sent, spelling and all. */
  path: string;
  credential: Credential;
  /** 0: no body. */
  bodyBytes: number;
  /** The client goes away while the answer's body is on its way. */
  hangUp: boolean;
  origin: OriginAnswer;
}

/** The held clock moves forward, requests go out together (one: alone; more: a burst, all sent before any answer), or credits are topped up. */
export type Step = { kind: "advance"; ms: number } | { kind: "send"; requests: RequestSpec[] } | TopUpStep;

/**
 * An operator tops up the scenario's `budget`-th budget of credits (period
 * `none`), counted round; nothing when it has none. Through the admin API of
 * the isolate that serves the requests, or (`elsewhere`) of another one.
 */
export interface TopUpStep {
  kind: "topup";
  budget: number;
  amount: number;
  elsewhere?: boolean;
}

export interface Scenario {
  config: ScenarioConfig;
  tenants: TenantSpec[];
  keys: KeySpec[];
  budgets: BudgetSpec[];
  steps: Step[];
}

/** The owner as the gateway names it, for a tenant and key named by the harness. */
export function ownerLabel(owner: BudgetOwner): string {
  return `${owner.kind}:${owner.name}`;
}
