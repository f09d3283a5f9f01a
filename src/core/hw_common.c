/*
 * hw_common.c: semantic type names, the error record, f16 conversion.
 */
#include "core/hw_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *
hw_enum_name(const char *const *names, int n, int v)
{
	return v >= 0 && v < n ? names[v] : NULL;
}

int
hw_enum_from_name(const char *const *names, int n, const char *s)
{
	for (int i = 0; s && i < n; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

static const char *const stype_names[HW_N_STYPES] = {
	"identifier", "numerical", "timestamp", "boolean", "categorical", "text", "ignored"
};

const char *
hw_stype_name(int stype)
{
	return hw_enum_name(stype_names, HW_N_STYPES, stype);
}

int
hw_stype_from_name(const char *name)
{
	return hw_enum_from_name(stype_names, HW_N_STYPES, name);
}

static const char *const num_loss_names[HW_N_NUM_LOSSES] = { "huber", "mae", "ordinal" };

const char *
hw_num_loss_name(int loss)
{
	return hw_enum_name(num_loss_names, HW_N_NUM_LOSSES, loss);
}

int
hw_num_loss_from_name(const char *s)
{
	return hw_enum_from_name(num_loss_names, HW_N_NUM_LOSSES, s);
}

int
hw_error_set(HwError *err, int code, const char *fmt, ...)
{
	if (err != NULL)
	{
		va_list ap;

		err->code = code;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return code;
}

uint16_t
hw_f32_to_f16(float f)
{
	uint32_t x;
	memcpy(&x, &f, 4);
	uint32_t sign = (x >> 16) & 0x8000u;
	int32_t  exp = (int32_t) ((x >> 23) & 0xff) - 127 + 15;
	uint32_t mant = x & 0x7fffffu;

	if (((x >> 23) & 0xff) == 0xff)        /* Inf / NaN */
		return (uint16_t) (sign | 0x7c00u | (mant ? 0x200u : 0));
	if (exp >= 31)                          /* overflow -> Inf */
		return (uint16_t) (sign | 0x7c00u);
	if (exp <= 0)                           /* subnormal or zero */
	{
		if (exp < -10)
			return (uint16_t) sign;
		mant |= 0x800000u;
		uint32_t shift = (uint32_t) (14 - exp);
		uint32_t half = mant >> shift;
		uint32_t rem = mant & ((1u << shift) - 1);
		uint32_t halfway = 1u << (shift - 1);
		if (rem > halfway || (rem == halfway && (half & 1)))
			half++;
		return (uint16_t) (sign | half);
	}
	uint32_t h = sign | ((uint32_t) exp << 10) | (mant >> 13);
	uint32_t rem = mant & 0x1fffu;
	if (rem > 0x1000u || (rem == 0x1000u && (h & 1)))
		h++;                                /* may carry into exponent: correct */
	return (uint16_t) h;
}

float
hw_f16_to_f32(uint16_t h)
{
	uint32_t sign = ((uint32_t) h & 0x8000u) << 16;
	uint32_t exp = (h >> 10) & 0x1f;
	uint32_t mant = h & 0x3ffu;
	uint32_t x;

	if (exp == 0)
	{
		if (mant == 0)
			x = sign;
		else
		{
			/* subnormal: normalise */
			int e = -1;
			do { e++; mant <<= 1; } while ((mant & 0x400u) == 0);
			x = sign | ((uint32_t) (127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
		}
	}
	else if (exp == 31)
		x = sign | 0x7f800000u | (mant << 13);
	else
		x = sign | ((exp - 15 + 127) << 23) | (mant << 13);
	float f;
	memcpy(&f, &x, 4);
	return f;
}

uint64_t
hw_hash_key_text(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++)
	{
		h ^= (unsigned char) s[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	return h;
}
