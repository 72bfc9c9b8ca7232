import type { ExecutionResult } from 'graphql'
import type { z } from 'zod'
import { AppError, isErrorCode, type ErrorCode, type RestErrorCode } from '../core/errors.js'
import type { Params, ParsedParams } from './params.js'

/** Security schemes of the OpenAPI document (src/openapi/document.ts defines them). */
export type SecurityScheme = 'walletSession' | 'adminToken' | 'internalToken'

/** An error a route documents: a code at its usual status, or at another one. */
export type ErrorDoc = RestErrorCode | { code: RestErrorCode; status: number }

/** What the OpenAPI document says about a route, beside what the route does. */
export interface RouteDoc {
  /** One line; the reference's operation title. */
  summary: string
  description?: string
  tags: string[]
  /** The errors this route answers with besides `internal` (500) and `unavailable` (503), which any route may. */
  errors: ErrorDoc[]
  security?: SecurityScheme[]
  /** Request headers that change the answer (documented only; routes read them from the request). */
  headers?: Params
}

/**
 * One REST route of the shim: a fixed GraphQL document run through Yoga's own pipeline (same
 * context factory, loaders, plugins, limits and error masking as /graphql), its result reshaped
 * into the spec's snake_case JSON. Its parameters and response are declared once: the shim parses
 * the parameters with them, and the OpenAPI document is generated from them.
 */
// biome-ignore lint/suspicious/noExplicitAny: the route table holds routes with their data types erased (defineRoute checks each one)
export interface RestRoute<Data = any, P extends Params = Params, Q extends Params = Params, R extends z.ZodType = z.ZodType> extends RouteDoc {
  method: 'GET' | 'POST' | 'DELETE'
  /** Hono path under /v1, e.g. `/vaults/:vault_id`. */
  path: string
  document: string
  /** Every `:name` segment of `path` (checked when the route is mounted). */
  params: P
  /** The query parameters the route reads; others are ignored (routes never see them). */
  query: Q
  /** The JSON body of a POST, declared once in its feature (src/keys/inputs.ts): `variables` parses `input.body` with it (src/core/input.ts), the OpenAPI document shows it. */
  body?: z.ZodType
  /** The body of a 200 answer. */
  response: R
  /** Builds the GraphQL variables from the parsed parameters; throws AppError('bad_request') on bad input. */
  variables(input: RouteInput<P, Q>): Record<string, unknown>
  /** Reshapes `data` into the response body; throws AppError('not_found') when the resource is absent. */
  shape(data: Data, input: RouteInput<P, Q>): z.input<R>
  /** `public` responses get an ETag and a short shared cache lifetime; the default is `no-store`. */
  cache?: { scope: 'public' | 'private'; maxAgeSeconds: number }
}

/** Infers a route's parameter, data and response types (the route table holds them erased). */
export function defineRoute<Data, P extends Params, Q extends Params, R extends z.ZodType>(route: RestRoute<Data, P, Q, R>): RestRoute {
  return route as unknown as RestRoute
}

export interface RouteInput<P extends Params = Params, Q extends Params = Params> {
  /** Path parameters, parsed by their declarations. */
  params: ParsedParams<P>
  /** Declared query parameters, parsed (absent ones hold their default or undefined). */
  query: ParsedParams<Q>
  /** The JSON object body of a POST (`{}` when the body is empty). */
  body: Record<string, unknown>
}

/** The `:name` segments of a Hono path. */
export const pathParamNames = (path: string) => [...path.matchAll(/:(\w+)/g)].map((m) => m[1]!)

/** The GraphQL result's first error as the AppError REST answers with. */
export function resultError(result: ExecutionResult): AppError | undefined {
  const first = result.errors?.[0]
  if (!first) return undefined
  const code = first.extensions?.code as ErrorCode | undefined
  const http = first.extensions?.http as { status?: number; headers?: Record<string, string> } | undefined
  if (isErrorCode(code)) return new AppError(code, first.message, { status: http?.status, headers: http?.headers })
  return new AppError('internal', 'Internal server error.')
}
