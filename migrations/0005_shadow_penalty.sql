CREATE TABLE `traffic_shadow` (
	`minute_ms` integer NOT NULL,
	`policy` text NOT NULL,
	`tenant` text NOT NULL,
	`decision` text NOT NULL,
	`count` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`minute_ms`, `policy`, `tenant`, `decision`)
);
--> statement-breakpoint
CREATE TABLE `traffic_shadow_callers` (
	`minute_ms` integer NOT NULL,
	`policy` text NOT NULL,
	`caller` text NOT NULL,
	`tenant` text,
	`count` integer DEFAULT 0 NOT NULL,
	`error` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`minute_ms`, `policy`, `caller`)
);
--> statement-breakpoint
ALTER TABLE `blocks` ADD `source` text DEFAULT 'admin' NOT NULL;--> statement-breakpoint
ALTER TABLE `blocks` ADD `shadow` integer DEFAULT false NOT NULL;