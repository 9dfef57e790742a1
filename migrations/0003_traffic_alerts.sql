CREATE TABLE `alert_attempts` (
	`alert_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`at_ms` integer NOT NULL,
	`outcome` text NOT NULL,
	`status` integer,
	PRIMARY KEY(`alert_id`, `attempt`)
);
--> statement-breakpoint
CREATE TABLE `alerts` (
	`id` text PRIMARY KEY NOT NULL,
	`type` text NOT NULL,
	`at_ms` integer NOT NULL,
	`tenant` text,
	`state` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_status` integer,
	`body` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `alerts_at_idx` ON `alerts` (`at_ms`);--> statement-breakpoint
CREATE TABLE `traffic_minutely` (
	`minute_ms` integer NOT NULL,
	`tenant` text NOT NULL,
	`decision` text NOT NULL,
	`count` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`minute_ms`, `tenant`, `decision`)
);
--> statement-breakpoint
CREATE INDEX `traffic_minutely_tenant_idx` ON `traffic_minutely` (`tenant`,`minute_ms`);--> statement-breakpoint
CREATE TABLE `traffic_refused` (
	`minute_ms` integer NOT NULL,
	`caller` text NOT NULL,
	`tenant` text,
	`count` integer DEFAULT 0 NOT NULL,
	`error` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`minute_ms`, `caller`)
);
