/* fuzz-policy.c — libFuzzer target for egress policy files (written by the person, IT or
 * corralctl; a damaged file must give an error, never a crash or a wrong rule).
 *
 * A parsed policy is serialised, parsed again and must serialise identically; a few decisions
 * are taken on it.
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-policy.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
        g_autoptr (CorralEgressPolicy) p =
                corral_egress_policy_new_from_json ((const char *) data, size, NULL);
        g_autoptr (CorralEgressPolicy) q = NULL;
        g_autofree char *json = NULL, *json2 = NULL, *rule = NULL, *rule2 = NULL;
        g_autoptr (GInetAddress) lo = NULL;

        if (!p)
                return 0;
        json = corral_egress_policy_to_json (p);
        q = corral_egress_policy_new_from_json (json, strlen (json), NULL);
        g_assert (q != NULL);
        json2 = corral_egress_policy_to_json (q);
        g_assert (strcmp (json, json2) == 0);
        (void) corral_egress_policy_check (p, "api.example.com", CORRAL_HOST_NAME, 443, &rule);
        (void) corral_egress_policy_check (p, "127.0.0.1", CORRAL_HOST_IPV4, 80, &rule2);
        lo = g_inet_address_new_loopback (G_SOCKET_FAMILY_IPV6);
        (void) corral_egress_policy_allows_address (p, lo, 8080);
        return 0;
}
