import { builder } from '../builder.js'
import './scalars.js'
import './vault.js'
import './api-key.js'

export const schema = builder.toSchema({ sortSchema: false })
