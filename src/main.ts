// Entry for `npm run dev` (tsx watch). `npm start` runs the compiled CLI instead.
// OpenTelemetry (opt-in) starts before anything it instruments is imported.
if (process.env.OTEL_EXPORTER_OTLP_ENDPOINT) await (await import('./core/telemetry.js')).startTelemetry()
const { main } = await import('./cli.js')
await main(process.argv.slice(2))
