CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`tenant` text NOT NULL,
	`name` text NOT NULL,
	`digest` text NOT NULL,
	`prefix` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer,
	`revoked_at` integer,
	`limits` text,
	`last_used_at` integer,
	`last_used_from` text,
	`use_count` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`tenant`) REFERENCES `tenants`(`slug`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_digest_unique` ON `api_keys` (`digest`);--> statement-breakpoint
CREATE INDEX `api_keys_tenant_idx` ON `api_keys` (`tenant`,`created_at`);--> statement-breakpoint
CREATE TABLE `audit_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`at` integer NOT NULL,
	`kind` text NOT NULL,
	`actor` text NOT NULL,
	`tenant` text,
	`subject` text,
	`detail` text DEFAULT '{}' NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_events_at_idx` ON `audit_events` (`at`);--> statement-breakpoint
CREATE INDEX `audit_events_kind_idx` ON `audit_events` (`kind`,`at`);--> statement-breakpoint
CREATE INDEX `audit_events_tenant_idx` ON `audit_events` (`tenant`,`at`);--> statement-breakpoint
CREATE TABLE `caller_overrides` (
	`caller_key` text PRIMARY KEY NOT NULL,
	`limits` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `tenants` (
	`slug` text PRIMARY KEY NOT NULL,
	`limits` text DEFAULT '{}' NOT NULL,
	`quota` text DEFAULT '{}' NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `usage_monthly` (
	`tenant` text NOT NULL,
	`period` text NOT NULL,
	`metric` text NOT NULL,
	`value` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`tenant`, `period`, `metric`)
);
--> statement-breakpoint
CREATE INDEX `usage_monthly_period_idx` ON `usage_monthly` (`period`,`tenant`,`metric`);