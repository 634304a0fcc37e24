import t from "tap";
import { CRON_NAME_RE, CRON_USER_RE, checkCronSchedule } from "../src/index.js";

t.test("valid schedules: macros, numbers, ranges, steps, lists, names", async (t) => {
  const valid = [
    "* * * * *",
    "0 3 * * *",
    "*/5 * * * *",
    "0-30/10 0-23/2 1-31 1-12 0-7",
    "5,10,15-20 8-17 * * mon-fri",
    "0 0 1 JAN,jul sun",
    "59 23 31 12 7",
    "0\t4 * * *",
    "  15 2 * * 1  ",
    "@reboot",
    "@yearly",
    "@annually",
    "@monthly",
    "@weekly",
    "@daily",
    "@midnight",
    "@hourly",
  ];
  for (const s of valid) t.equal(checkCronSchedule(s), null, JSON.stringify(s));
});

t.test("invalid schedules name the field and what is wrong", async (t) => {
  const invalid: Array<[string, RegExp]> = [
    ["", /must be 5 fields/],
    ["* * * *", /must be 5 fields/],
    ["* * * * * *", /must be 5 fields/],
    ["@every5m", /is not one of @reboot/],
    ["@daily *", /is not one of/],
    ["60 * * * *", /minute 60 is out of range 0-59/],
    ["* 24 * * *", /hour 24 is out of range 0-23/],
    ["* * 0 * *", /day-of-month 0 is out of range 1-31/],
    ["* * 32 * *", /day-of-month 32/],
    ["* * * 13 *", /month 13 is out of range 1-12/],
    ["* * * * 8", /day-of-week 8 is out of range 0-7/],
    ["* * * foo *", /month 'foo' is not a number 1-12 or a name/],
    ["* * * * sunday", /day-of-week 'sunday'/],
    ["mon * * * *", /minute 'mon' is not a number/],
    ["*/0 * * * *", /minute step '0' must be a number 1-60/],
    ["*/61 * * * *", /minute step '61'/],
    ["5/10 * * * *", /must follow '\*' or a range/],
    ["*/5/2 * * * *", /more than one '\/'/],
    ["30-10 * * * *", /must not run backwards/],
    ["1-2-3 * * * *", /not a value or a range/],
    ["1, * * * *", /empty list item/],
    ["-5 * * * *", /not a value or a range/],
    ["* * * * fri-mon", /must not run backwards/],
    ["1.5 * * * *", /minute '1.5'/],
    ["* * * * *\n* * * * *", /one line/],
  ];
  for (const [s, re] of invalid) t.match(checkCronSchedule(s), re, JSON.stringify(s));
});

t.test("cron entry names follow run-parts' rule; users are one column", async (t) => {
  for (const ok of ["backup", "db_dump-2", "A".repeat(64)]) t.ok(CRON_NAME_RE.test(ok), ok);
  for (const bad of ["", "a.b", "back up", "../x", "x/y", "A".repeat(65), "café"]) t.notOk(CRON_NAME_RE.test(bad), bad);
  for (const ok of ["root", "www-data", "svc.app", "machine$"]) t.ok(CRON_USER_RE.test(ok), ok);
  for (const bad of ["", "two words", "a\tb", "-x", "x".repeat(33)]) t.notOk(CRON_USER_RE.test(bad), bad);
});
