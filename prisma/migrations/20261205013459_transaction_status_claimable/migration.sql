-- AlterEnum
ALTER TYPE "TransactionStatus" ADD VALUE 'claimable';
