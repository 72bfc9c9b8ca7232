-- CreateEnum
CREATE TYPE "KeyVerifyOutcome" AS ENUM ('active', 'revoked', 'expired', 'not_whitelisted', 'ip_not_allowed');

-- AlterTable
ALTER TABLE "api_keys" ADD COLUMN     "allowed_cidrs" TEXT[] DEFAULT ARRAY[]::TEXT[],
ADD COLUMN     "last_used_at" TIMESTAMPTZ(3),
ADD COLUMN     "name" TEXT;

-- CreateTable
CREATE TABLE "api_key_usage" (
    "key_id" UUID NOT NULL,
    "day" DATE NOT NULL,
    "outcome" "KeyVerifyOutcome" NOT NULL,
    "count" BIGINT NOT NULL,

    CONSTRAINT "api_key_usage_pkey" PRIMARY KEY ("key_id","day","outcome")
);

-- CreateIndex
CREATE INDEX "api_key_usage_day_idx" ON "api_key_usage"("day");

-- AddForeignKey
ALTER TABLE "api_key_usage" ADD CONSTRAINT "api_key_usage_key_id_fkey" FOREIGN KEY ("key_id") REFERENCES "api_keys"("id") ON DELETE CASCADE ON UPDATE CASCADE;
