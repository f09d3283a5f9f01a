/* test_name_rules.c: the column-name rules of type inference (name_rules.h). */
#include "unit.h"
#include "core/name_rules.h"

#include <string.h>

UNIT_TEST(name_normalize_snake_camel)
{
	char b[HW_NAME_NORM_MAX];

	hw_name_normalize("CreationDate", b, sizeof(b));
	CHECK(strcmp(b, "creation_date") == 0);
	hw_name_normalize("customerID", b, sizeof(b));
	CHECK(strcmp(b, "customer_id") == 0);
	hw_name_normalize("HTTPStatus", b, sizeof(b));
	CHECK(strcmp(b, "http_status") == 0);
	hw_name_normalize("__a--b  c_", b, sizeof(b));
	CHECK(strcmp(b, "a_b_c") == 0);
	hw_name_normalize("address2", b, sizeof(b));
	CHECK(strcmp(b, "address2") == 0);
	hw_name_normalize("abcdef", b, 4);
	CHECK(strlen(b) < 4);
}

UNIT_TEST(name_code_like)
{
	const char *yes[] = {"status", "status_id", "type_code", "order_kind", "ticket_status", "risk_level",
		"is_flag", "id", "StatusID", "category", "age_group", "tier", NULL};
	const char *no[] = {"quantity", "rating", "statuses", "idx", "identity", "amount", "coded_at", "active", NULL};

	for (int i = 0; yes[i]; i++)
		CHECK_MSG(hw_name_code_like(yes[i]), "%s should be code-like", yes[i]);
	for (int i = 0; no[i]; i++)
		CHECK_MSG(!hw_name_code_like(no[i]), "%s should not be code-like", no[i]);
	CHECK(hw_name_id_like("id") && hw_name_id_like("parent_id") && hw_name_id_like("ParentId"));
	CHECK(!hw_name_id_like("status") && !hw_name_id_like("paid"));
}

UNIT_TEST(name_date_classes)
{
	const char *creation[] = {"created_at", "created", "creation_date", "CreationDate", "create_date",
		"date_created", "inserted_at", "signup_at", "signup_date", "signed_up_at", "registered_on",
		"registration_date", "joined", "date_joined", "opened_at", "added_at", NULL};
	const char *attribute[] = {"birth_date", "birthdate", "birthday", "dob", "date_of_birth", "born",
		"founded", "founded_on", "established", "opening_date", "expiry", "expires_at", "expiration_date",
		"valid_until", "valid_to", "due_date", "end_date", "ends_at", "deleted_at", "closed_at", NULL};
	const char *maintenance[] = {"last_update", "updated_at", "modified", "last_modified", "date_modified",
		"last_login", NULL};
	const char *plain[] = {"order_date", "ordered_at", "at", "seen_at", "launched_on", "hire_date",
		"rental_date", "return_date", "start_date", "weekend_date", "created_by_date_x", NULL};

	for (int i = 0; creation[i]; i++)
		CHECK_MSG(hw_name_date_class(creation[i]) == HW_DATE_CREATION, "%s should be creation", creation[i]);
	for (int i = 0; attribute[i]; i++)
		CHECK_MSG(hw_name_date_class(attribute[i]) == HW_DATE_ATTRIBUTE, "%s should be attribute", attribute[i]);
	for (int i = 0; maintenance[i]; i++)
		CHECK_MSG(hw_name_date_class(maintenance[i]) == HW_DATE_MAINTENANCE, "%s should be maintenance", maintenance[i]);
	for (int i = 0; plain[i]; i++)
		CHECK_MSG(hw_name_date_class(plain[i]) == HW_DATE_PLAIN, "%s should be plain", plain[i]);
}

UNIT_TEST(name_after_table)
{
	CHECK(hw_name_after_table("rental_date", "rental"));
	CHECK(hw_name_after_table("order_date", "orders"));
	CHECK(hw_name_after_table("ordered_at", "orders"));
	CHECK(hw_name_after_table("returned_at", "returns"));
	CHECK(hw_name_after_table("payment_date", "payment"));
	CHECK(hw_name_after_table("category_date", "categories"));
	CHECK(hw_name_after_table("address_date", "addresses"));
	CHECK(hw_name_after_table("OrderDate", "Orders"));
	CHECK(!hw_name_after_table("return_date", "rental"));
	CHECK(!hw_name_after_table("orderly", "orders"));
	CHECK(!hw_name_after_table("created_at", "orders"));
}
