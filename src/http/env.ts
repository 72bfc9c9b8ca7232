/** Variables set on every Hono request. */
export type AppEnv = { Variables: { requestId: string } }
