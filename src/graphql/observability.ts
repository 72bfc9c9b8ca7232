import { getOperationAST } from 'graphql'
import type { Plugin } from 'graphql-yoga'
import { isErrorCode } from '../core/errors.js'
import { errorsByCode, graphqlDuration, graphqlOperations, operationLabel } from '../core/metrics.js'

/** GraphQL operations by name and type, their latency, and the error codes they answered with. */
export const useOperationMetrics = (): Plugin => ({
  onExecute({ args }) {
    const started = performance.now()
    const op = getOperationAST(args.document, args.operationName)
    const operation = operationLabel(op?.name?.value)
    graphqlOperations.inc({ operation, type: op?.operation ?? 'unknown' })
    return {
      onExecuteDone({ result }) {
        graphqlDuration.observe({ operation }, (performance.now() - started) / 1000)
        // REST routes count their errors where they answer (errorResponse); count /graphql's here.
        const request = (args.contextValue as { request?: Request }).request
        if (request && new URL(request.url).pathname !== '/graphql') return
        if ('errors' in result && result.errors) {
          for (const e of result.errors) {
            const code = e.extensions?.code
            errorsByCode.inc({ code: isErrorCode(code) ? code : 'internal' })
          }
        }
      },
    }
  },
})
