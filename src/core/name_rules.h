/*
 * name_rules.h: the column-name rules of type inference (docs/catalog.md,
 * "Typing" and "Time column").  Pure C, no PostgreSQL: the catalog
 * (src/pg/catalog/catalog_build.c) calls them, test/unit/test_name_rules.c tests them.
 *
 * Names are compared in a normalized form: lower case, words separated by
 * one '_' (CamelCase and the characters ' ', '-', '.' split words too), so
 * "CreationDate", "creation-date" and "creation_date" are one name.
 */
#ifndef HW_NAME_RULES_H
#define HW_NAME_RULES_H

#include <stdbool.h>
#include <stddef.h>

#define HW_NAME_NORM_MAX 256	/* normalized names are cut to this many bytes */

/* lower-case snake form of name into out (cap bytes, NUL-terminated) */
void hw_name_normalize(const char *name, char *out, size_t cap);

/* "id" or "..._id" (after normalization: "CustomerID" too) */
bool hw_name_id_like(const char *name);

/* the name of a code: its last word is one of id, code, status, type, kind,
 * category, level, flag, class, group, tier ("status", "status_id",
 * "type_code", "order_kind") */
bool hw_name_code_like(const char *name);

typedef enum HwDateClass
{
	HW_DATE_PLAIN = 0,			/* an ordinary date: a time column only when it is the one candidate */
	HW_DATE_CREATION,			/* when the row came into existence: created_at, signup_date, date_joined ... */
	HW_DATE_MAINTENANCE,		/* bookkeeping of later changes: last_update, updated_at, modified ... */
	HW_DATE_ATTRIBUTE			/* a property, or the end of the row's life: birth_date, dob, expires_at, due_date, end_date ... */
} HwDateClass;

/* class of a date/timestamp column by its name (maintenance, then
 * attribute, then creation are tried in this order) */
HwDateClass hw_name_date_class(const char *name);

/* the column is named after its table: "<table>_...", "<singular>_...",
 * "<singular>ed_..." / "<singular>d_..." (rental_date of rental,
 * order_date and ordered_at of orders, returned_at of returns) */
bool hw_name_after_table(const char *column, const char *table);

#endif
