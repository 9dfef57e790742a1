CREATE TABLE `blocks` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`target` text NOT NULL,
	`expires_at` integer,
	`reason` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `blocks_target_unique` ON `blocks` (`target`);--> statement-breakpoint
CREATE TABLE `orgs` (
	`slug` text PRIMARY KEY NOT NULL,
	`quota` text DEFAULT '{}' NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `usage_adjustments` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant` text NOT NULL,
	`period` text NOT NULL,
	`metric` text NOT NULL,
	`value` integer NOT NULL,
	`attribution` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `usage_adjustments_tenant_idx` ON `usage_adjustments` (`tenant`,`metric`);--> statement-breakpoint
CREATE INDEX `usage_adjustments_period_idx` ON `usage_adjustments` (`period`,`tenant`,`metric`);--> statement-breakpoint
ALTER TABLE `caller_overrides` ADD `expires_at` integer;--> statement-breakpoint
ALTER TABLE `caller_overrides` ADD `reason` text;--> statement-breakpoint
ALTER TABLE `tenants` ADD `org` text REFERENCES orgs(slug);--> statement-breakpoint
CREATE INDEX `tenants_org_idx` ON `tenants` (`org`,`slug`);--> statement-breakpoint
CREATE INDEX `audit_events_subject_idx` ON `audit_events` (`subject`);