ALTER TABLE `api_keys` ADD `budgets` text;--> statement-breakpoint
ALTER TABLE `orgs` ADD `budgets` text;--> statement-breakpoint
ALTER TABLE `tenants` ADD `budgets` text;