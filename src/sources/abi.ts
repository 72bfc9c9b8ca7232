import { parseAbi } from 'viem'

/** The events the follower turns into transactions: ERC-4626 Deposit/Withdraw, ERC-7540 RedeemRequest. */
export const vaultEventsAbi = parseAbi([
  'event Deposit(address indexed sender, address indexed owner, uint256 assets, uint256 shares)',
  'event Withdraw(address indexed sender, address indexed receiver, address indexed owner, uint256 assets, uint256 shares)',
  'event RedeemRequest(address indexed controller, address indexed owner, uint256 indexed requestId, address sender, uint256 shares)',
])

/** The read-only calls of ERC-4626 (and ERC-20 decimals, ERC-7540 claimableRedeemRequest) the follower makes. */
export const vaultReadAbi = parseAbi([
  'function claimableRedeemRequest(uint256 requestId, address controller) view returns (uint256)',
  'function asset() view returns (address)',
  'function decimals() view returns (uint8)',
  'function totalAssets() view returns (uint256)',
  'function totalSupply() view returns (uint256)',
  'function convertToAssets(uint256 shares) view returns (uint256)',
])

/** ERC-165 and the ERC-7540 probe used by `checkSources`. */
export const erc7540ProbeAbi = parseAbi([
  'function supportsInterface(bytes4 interfaceId) view returns (bool)',
  'function pendingRedeemRequest(uint256 requestId, address controller) view returns (uint256)',
])

/** ERC-7540 interface ids (ERC-165). */
export const ERC7540_ASYNC_REDEEM = '0x620ee8e4'
export const ERC7540_OPERATOR = '0xe3bc4e65'

/** Multicall3 is deployed at this address on most EVM chains. */
export const MULTICALL3_CANONICAL = '0xca11bde05977b3631167028862be2a173976ca11'
