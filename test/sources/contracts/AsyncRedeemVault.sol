// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

import {ERC20, IERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC4626} from "@openzeppelin/contracts/token/ERC20/extensions/ERC4626.sol";
import {SafeERC20} from "@openzeppelin/contracts/token/ERC20/utils/SafeERC20.sol";
import {Math} from "@openzeppelin/contracts/utils/math/Math.sol";

/// An ERC-7540 vault with asynchronous redeems, written for the tests. Deposits stay synchronous
/// (ERC-4626 `deposit`/`mint`, `Deposit` event). A redeem is requested (`requestRedeem` escrows the
/// shares and emits `RedeemRequest`), fulfilled by the vault's manager (`fulfillRedeem` burns the
/// shares at the current price and sets the assets aside), and claimed by the controller or its
/// operator with `redeem`/`withdraw` (ERC-4626 `Withdraw` event). Requests are aggregated per
/// controller under request id 0, as ERC-7540 allows.
contract AsyncRedeemVault is ERC4626 {
    using SafeERC20 for IERC20;

    event RedeemRequest(
        address indexed controller, address indexed owner, uint256 indexed requestId, address sender, uint256 shares
    );
    event OperatorSet(address indexed controller, address indexed operator, bool approved);

    error Unauthorized();
    error ExceedsPending();
    error ExceedsClaimable();
    error AsyncRedeem();

    address public immutable manager;
    mapping(address controller => uint256) private _pendingShares;
    mapping(address controller => uint256) private _claimableShares;
    mapping(address controller => uint256) private _claimableAssets;
    /// Fulfilled but unclaimed assets: still held by the vault, no longer the shareholders'.
    uint256 public totalClaimableAssets;
    mapping(address controller => mapping(address operator => bool)) public isOperator;

    constructor(IERC20 asset_) ERC20("Async Vault Share", "avUSD") ERC4626(asset_) {
        manager = msg.sender;
    }

    function _decimalsOffset() internal pure override returns (uint8) {
        return 12;
    }

    function totalAssets() public view override returns (uint256) {
        return IERC20(asset()).balanceOf(address(this)) - totalClaimableAssets;
    }

    /// ERC-7575: the vault is its own share token.
    function share() external view returns (address) {
        return address(this);
    }

    function supportsInterface(bytes4 interfaceId) external pure returns (bool) {
        return interfaceId == 0x01ffc9a7 // ERC-165
            || interfaceId == 0xe3bc4e65 // ERC-7540 operator methods
            || interfaceId == 0x620ee8e4 // ERC-7540 asynchronous redeem
            || interfaceId == 0x2f0a18c5; // ERC-7575
    }

    function setOperator(address operator, bool approved) external returns (bool) {
        isOperator[msg.sender][operator] = approved;
        emit OperatorSet(msg.sender, operator, approved);
        return true;
    }

    function requestRedeem(uint256 shares, address controller, address owner) external returns (uint256 requestId) {
        if (owner != msg.sender && !isOperator[owner][msg.sender]) _spendAllowance(owner, msg.sender, shares);
        _transfer(owner, address(this), shares);
        _pendingShares[controller] += shares;
        emit RedeemRequest(controller, owner, 0, msg.sender, shares);
        return 0;
    }

    function pendingRedeemRequest(uint256, address controller) external view returns (uint256) {
        return _pendingShares[controller];
    }

    function claimableRedeemRequest(uint256, address controller) external view returns (uint256) {
        return _claimableShares[controller];
    }

    /// Fulfils `shares` of the controller's pending request at the current share price.
    function fulfillRedeem(address controller, uint256 shares) external returns (uint256 assets) {
        if (msg.sender != manager) revert Unauthorized();
        if (shares > _pendingShares[controller]) revert ExceedsPending();
        assets = convertToAssets(shares);
        _pendingShares[controller] -= shares;
        _burn(address(this), shares);
        _claimableShares[controller] += shares;
        _claimableAssets[controller] += assets;
        totalClaimableAssets += assets;
    }

    function maxRedeem(address controller) public view override returns (uint256) {
        return _claimableShares[controller];
    }

    function maxWithdraw(address controller) public view override returns (uint256) {
        return _claimableAssets[controller];
    }

    // ERC-7540: an asynchronous flow has no preview.
    function previewRedeem(uint256) public pure override returns (uint256) {
        revert AsyncRedeem();
    }

    function previewWithdraw(uint256) public pure override returns (uint256) {
        revert AsyncRedeem();
    }

    /// Claims `shares` of the controller's fulfilled request.
    function redeem(uint256 shares, address receiver, address controller) public override returns (uint256 assets) {
        uint256 claimable = _claimableShares[controller];
        if (shares > claimable) revert ExceedsClaimable();
        assets = Math.mulDiv(_claimableAssets[controller], shares, claimable);
        _claim(controller, receiver, assets, shares);
    }

    /// Claims `assets` of the controller's fulfilled request.
    function withdraw(uint256 assets, address receiver, address controller) public override returns (uint256 shares) {
        uint256 claimable = _claimableAssets[controller];
        if (assets > claimable) revert ExceedsClaimable();
        shares = Math.mulDiv(_claimableShares[controller], assets, claimable, Math.Rounding.Ceil);
        _claim(controller, receiver, assets, shares);
    }

    function _claim(address controller, address receiver, uint256 assets, uint256 shares) private {
        if (controller != msg.sender && !isOperator[controller][msg.sender]) revert Unauthorized();
        _claimableShares[controller] -= shares;
        _claimableAssets[controller] -= assets;
        totalClaimableAssets -= assets;
        IERC20(asset()).safeTransfer(receiver, assets);
        emit Withdraw(msg.sender, receiver, controller, assets, shares);
    }
}
