// Entry for `npm run dev` (tsx watch). `npm start` runs the compiled CLI instead.
import { main } from './cli.js'

await main(process.argv.slice(2))
