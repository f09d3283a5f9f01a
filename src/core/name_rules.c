/*
 * name_rules.c: column-name rules of type inference (see name_rules.h).
 */
#include "core/name_rules.h"

#include <string.h>

#define MAX_WORDS 16

static bool
is_upper(char c)
{
	return c >= 'A' && c <= 'Z';
}

static bool
is_lower_or_digit(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

void
hw_name_normalize(const char *name, char *out, size_t cap)
{
	size_t j = 0;

	if (cap == 0)
		return;
	for (size_t i = 0; name[i] && j + 2 < cap; i++)
	{
		char c = name[i];

		if (c == '_' || c == ' ' || c == '-' || c == '.')
		{
			if (j > 0 && out[j - 1] != '_')
				out[j++] = '_';
			continue;
		}
		if (is_upper(c))
		{
			/* a word starts at "aB" and at the last capital of "ABc" */
			bool split = i > 0 && (is_lower_or_digit(name[i - 1]) ||
								   (is_upper(name[i - 1]) && name[i + 1] >= 'a' && name[i + 1] <= 'z'));

			if (split && j > 0 && out[j - 1] != '_')
				out[j++] = '_';
			c = (char) (c - 'A' + 'a');
		}
		out[j++] = c;
	}
	while (j > 0 && out[j - 1] == '_')
		j--;
	out[j] = '\0';
}

/* split a normalized name in place into words; returns their number */
static int
words_of(const char *name, char *buf, char **w)
{
	int n = 0;

	hw_name_normalize(name, buf, HW_NAME_NORM_MAX);
	for (char *p = buf; *p && n < MAX_WORDS;)
	{
		w[n++] = p;
		char *u = strchr(p, '_');

		if (u == NULL)
			break;
		*u = '\0';
		p = u + 1;
	}
	return n;
}

static bool
in_list(const char *s, const char *const *list)
{
	for (int i = 0; list[i]; i++)
		if (strcmp(s, list[i]) == 0)
			return true;
	return false;
}

bool
hw_name_id_like(const char *name)
{
	char buf[HW_NAME_NORM_MAX];
	char *w[MAX_WORDS];
	int n = words_of(name, buf, w);

	return n > 0 && strcmp(w[n - 1], "id") == 0;
}

bool
hw_name_code_like(const char *name)
{
	static const char *const code_words[] = {"id", "code", "status", "type", "kind", "category",
		"level", "flag", "class", "group", "tier", NULL};
	char buf[HW_NAME_NORM_MAX];
	char *w[MAX_WORDS];
	int n = words_of(name, buf, w);

	return n > 0 && in_list(w[n - 1], code_words);
}

/* every word of w[from..to) is a time word ("at", "on", "date", ...) */
static bool
all_time_words(char **w, int from, int to)
{
	static const char *const time_words[] = {"at", "on", "date", "time", "ts", "timestamp", "datetime",
		"dt", "utc", "day", NULL};

	for (int i = from; i < to; i++)
		if (!in_list(w[i], time_words))
			return false;
	return true;
}

HwDateClass
hw_name_date_class(const char *name)
{
	/* later changes to the row */
	static const char *const maintenance_words[] = {"updated", "update", "modified", "modification",
		"changed", "edited", "refreshed", "synced", NULL};
	/* a property of the entity, or the end of the row's life (never when it came to be) */
	static const char *const attribute_words[] = {"birth", "birthday", "birthdate", "dob", "born",
		"death", "died", "founded", "founding", "established", "opening", "expiry", "expires",
		"expire", "expired", "expiration", "until", "thru", "through", "due", "deadline", "end",
		"ends", "ended", "maturity", "anniversary", "close", "closed", "closing", "deleted",
		"archived", "cancelled", "canceled", "terminated", "termination", NULL};
	/* first word of a creation stamp ("created_at", "signup_date", "registered") */
	static const char *const creation_first[] = {"created", "create", "creation", "inserted", "insert",
		"added", "registered", "registration", "signup", "joined", "join", "opened", NULL};
	/* last word of one written the other way round ("date_created", "date_joined") */
	static const char *const creation_last[] = {"created", "inserted", "added", "registered", "joined", NULL};
	char buf[HW_NAME_NORM_MAX];
	char *w[MAX_WORDS];
	int n = words_of(name, buf, w);

	if (n == 0)
		return HW_DATE_PLAIN;
	if (strcmp(w[0], "last") == 0)
		return HW_DATE_MAINTENANCE;		/* last_update, last_login, last_seen_at */
	for (int i = 0; i < n; i++)
		if (in_list(w[i], maintenance_words))
			return HW_DATE_MAINTENANCE;
	for (int i = 0; i < n; i++)
		if (in_list(w[i], attribute_words))
			return HW_DATE_ATTRIBUTE;
	if (n >= 2 && strcmp(w[n - 1], "to") == 0)
		return HW_DATE_ATTRIBUTE;		/* valid_to, effective_to */
	if (in_list(w[0], creation_first) && all_time_words(w, 1, n))
		return HW_DATE_CREATION;
	if (n >= 2 && in_list(w[n - 1], creation_last) && all_time_words(w, 0, n - 1))
		return HW_DATE_CREATION;
	if (n >= 2 && (strcmp(w[0], "signed") == 0 || strcmp(w[0], "sign") == 0) &&
		strcmp(w[1], "up") == 0 && all_time_words(w, 2, n))
		return HW_DATE_CREATION;		/* signed_up_at, sign_up_date */
	return HW_DATE_PLAIN;
}

static bool
prefix_then(const char *s, const char *prefix, size_t plen, const char *rest)
{
	return plen > 0 && strncmp(s, prefix, plen) == 0 && strncmp(s + plen, rest, strlen(rest)) == 0;
}

bool
hw_name_after_table(const char *column, const char *table)
{
	char c[HW_NAME_NORM_MAX], t[HW_NAME_NORM_MAX], sing[HW_NAME_NORM_MAX];
	size_t tl, sl;

	hw_name_normalize(column, c, sizeof(c));
	hw_name_normalize(table, t, sizeof(t));
	tl = strlen(t);
	/* singular of the table's name: -ies -> -y, -sses/-shes/-ches/-xes -> drop -es, -s -> drop */
	memcpy(sing, t, tl + 1);
	if (tl > 3 && strcmp(t + tl - 3, "ies") == 0)
		strcpy(sing + tl - 3, "y");
	else if (tl > 4 && (strcmp(t + tl - 4, "sses") == 0 || strcmp(t + tl - 4, "shes") == 0 ||
						strcmp(t + tl - 4, "ches") == 0))
		sing[tl - 2] = '\0';
	else if (tl > 3 && strcmp(t + tl - 3, "xes") == 0)
		sing[tl - 2] = '\0';
	else if (tl > 1 && t[tl - 1] == 's' && t[tl - 2] != 's')
		sing[tl - 1] = '\0';
	sl = strlen(sing);
	return prefix_then(c, t, tl, "_") || prefix_then(c, sing, sl, "_") ||
		prefix_then(c, sing, sl, "ed_") || prefix_then(c, sing, sl, "d_");
}
