// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20, IERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC4626} from "@openzeppelin/contracts/token/ERC20/extensions/ERC4626.sol";

/// OpenZeppelin's ERC-4626 vault, unchanged but for a decimals offset of 12: over a 6-decimal asset
/// its shares have 18 decimals, as in many production vaults.
contract TestVault is ERC4626 {
    constructor(IERC20 asset_) ERC20("Test Vault Share", "tvUSD") ERC4626(asset_) {}

    function _decimalsOffset() internal pure override returns (uint8) {
        return 12;
    }
}
