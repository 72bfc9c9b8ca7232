import { builder } from '../builder.js'
import './scalars.js'
import './vault.js'
import './composition.js'
import './performance.js'
import './user.js'
import './transaction.js'
import './position.js'
import './api-key.js'
import './subscription.js'
import './meta.js'

export const schema = builder.toSchema({ sortSchema: false })
