/* egress-ca.c — per-session CA and leaf certificates with GnuTLS (see egress-ca.h).
 *
 * SPDX-License-Identifier: GPL-3.0-or-later
 */
#include "egress-ca.h"

#include "egress-addr.h"

#include <glib/gi18n.h>
#include <gnutls/x509.h>
#include <string.h>
#include <sys/random.h>

#define LEAF_MAX 256

struct _EgressCa {
        GMutex lock;
        gnutls_x509_privkey_t key; /* signs leaves */
        gnutls_x509_privkey_t leaf_key; /* one key for every leaf of the session */
        gnutls_x509_crt_t crt;
        char *pem;
        GHashTable *leaves; /* host -> gnutls_certificate_credentials_t */
};

static gboolean
tls_fail (GError **error, const char *what, int ret)
{
        g_set_error (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_UPSTREAM, "%s: %s", what,
                     gnutls_strerror (ret));
        return FALSE;
}

static int
set_common (gnutls_x509_crt_t crt, gnutls_x509_privkey_t key)
{
        guint8 serial[16];
        time_t now = time (NULL);
        int ret;

        if (getrandom (serial, sizeof serial, 0) != sizeof serial)
                return GNUTLS_E_RANDOM_FAILED;
        serial[0] &= 0x7f; /* positive */
        if ((ret = gnutls_x509_crt_set_version (crt, 3)) < 0 ||
            (ret = gnutls_x509_crt_set_serial (crt, serial, sizeof serial)) < 0 ||
            (ret = gnutls_x509_crt_set_activation_time (crt, now - 3600)) < 0 ||
            (ret = gnutls_x509_crt_set_expiration_time (crt, now + 7 * 24 * 3600)) < 0 ||
            (ret = gnutls_x509_crt_set_key (crt, key)) < 0)
                return ret;
        return 0;
}

EgressCa *
egress_ca_new (GError **error)
{
        g_autoptr (EgressCa) ca = g_new0 (EgressCa, 1);
        gnutls_datum_t pem = { NULL, 0 };
        guint8 id[20];
        gsize id_len = sizeof id;
        int ret;

        g_mutex_init (&ca->lock);
        ca->leaves = g_hash_table_new_full (g_str_hash, g_str_equal, g_free,
                                            (GDestroyNotify) gnutls_certificate_free_credentials);
        if ((ret = gnutls_x509_privkey_init (&ca->key)) < 0 ||
            (ret = gnutls_x509_privkey_generate (ca->key, GNUTLS_PK_ECDSA,
                                                 GNUTLS_CURVE_TO_BITS (GNUTLS_ECC_CURVE_SECP256R1),
                                                 0)) < 0 ||
            (ret = gnutls_x509_privkey_init (&ca->leaf_key)) < 0 ||
            (ret = gnutls_x509_privkey_generate (ca->leaf_key, GNUTLS_PK_ECDSA,
                                                 GNUTLS_CURVE_TO_BITS (GNUTLS_ECC_CURVE_SECP256R1),
                                                 0)) < 0 ||
            (ret = gnutls_x509_crt_init (&ca->crt)) < 0 ||
            (ret = set_common (ca->crt, ca->key)) < 0 ||
            (ret = gnutls_x509_crt_set_dn (ca->crt, "CN=Corral session CA,O=Corral", NULL)) < 0 ||
            (ret = gnutls_x509_crt_set_basic_constraints (ca->crt, 1, 0)) < 0 ||
            (ret = gnutls_x509_crt_set_key_usage (ca->crt, GNUTLS_KEY_KEY_CERT_SIGN |
                                                                   GNUTLS_KEY_CRL_SIGN)) < 0 ||
            (ret = gnutls_x509_crt_get_key_id (ca->crt, 0, id, &id_len)) < 0 ||
            (ret = gnutls_x509_crt_set_subject_key_id (ca->crt, id, id_len)) < 0 ||
            (ret = gnutls_x509_crt_sign2 (ca->crt, ca->crt, ca->key, GNUTLS_DIG_SHA256, 0)) < 0 ||
            (ret = gnutls_x509_crt_export2 (ca->crt, GNUTLS_X509_FMT_PEM, &pem)) < 0) {
                tls_fail (error, _ ("Could not create the session CA"), ret);
                return NULL;
        }
        ca->pem = g_strndup ((const char *) pem.data, pem.size);
        gnutls_free (pem.data);
        return g_steal_pointer (&ca);
}

void
egress_ca_free (EgressCa *ca)
{
        if (!ca)
                return;
        g_clear_pointer (&ca->leaves, g_hash_table_unref);
        if (ca->crt)
                gnutls_x509_crt_deinit (ca->crt);
        if (ca->key)
                gnutls_x509_privkey_deinit (ca->key);
        if (ca->leaf_key)
                gnutls_x509_privkey_deinit (ca->leaf_key);
        g_free (ca->pem);
        g_mutex_clear (&ca->lock);
        g_free (ca);
}

const char *
egress_ca_get_pem (EgressCa *ca)
{
        return ca->pem;
}

static gnutls_certificate_credentials_t
make_leaf (EgressCa *ca, const char *host, GError **error)
{
        gnutls_x509_crt_t crt = NULL;
        gnutls_certificate_credentials_t cred = NULL;
        g_autofree char *dn = g_strdup_printf ("CN=%s", host);
        guint8 id[20];
        gsize id_len = sizeof id;
        int ret;

        if ((ret = gnutls_x509_crt_init (&crt)) < 0 || (ret = set_common (crt, ca->leaf_key)) < 0 ||
            (ret = gnutls_x509_crt_set_dn (crt, dn, NULL)) < 0 ||
            (ret = gnutls_x509_crt_set_subject_alt_name (crt, GNUTLS_SAN_DNSNAME, host,
                                                         (unsigned) strlen (host),
                                                         GNUTLS_FSAN_SET)) < 0 ||
            (ret = gnutls_x509_crt_set_basic_constraints (crt, 0, -1)) < 0 ||
            (ret = gnutls_x509_crt_set_key_usage (crt, GNUTLS_KEY_DIGITAL_SIGNATURE)) < 0 ||
            (ret = gnutls_x509_crt_set_key_purpose_oid (crt, GNUTLS_KP_TLS_WWW_SERVER, 0)) < 0 ||
            (ret = gnutls_x509_crt_get_subject_key_id (ca->crt, id, &id_len, NULL)) < 0 ||
            (ret = gnutls_x509_crt_set_authority_key_id (crt, id, id_len)) < 0 ||
            (ret = gnutls_x509_crt_sign2 (crt, ca->crt, ca->key, GNUTLS_DIG_SHA256, 0)) < 0 ||
            (ret = gnutls_certificate_allocate_credentials (&cred)) < 0 ||
            (ret = gnutls_certificate_set_x509_key (cred, &crt, 1, ca->leaf_key)) < 0) {
                if (cred)
                        gnutls_certificate_free_credentials (cred);
                cred = NULL;
                tls_fail (error, _ ("Could not make a certificate for the session"), ret);
        }
        if (crt)
                gnutls_x509_crt_deinit (crt);
        return cred;
}

gnutls_certificate_credentials_t
egress_ca_leaf (EgressCa *ca, const char *host, GError **error)
{
        gnutls_certificate_credentials_t cred;

        g_mutex_lock (&ca->lock);
        cred = g_hash_table_lookup (ca->leaves, host);
        if (!cred && g_hash_table_size (ca->leaves) >= LEAF_MAX)
                g_hash_table_remove_all (ca->leaves); /* only bound hosts get here: rare */
        if (!cred && (cred = make_leaf (ca, host, error)))
                g_hash_table_insert (ca->leaves, g_strdup (host), cred);
        g_mutex_unlock (&ca->lock);
        return cred;
}

gnutls_certificate_credentials_t
egress_upstream_credentials_new (const char *extra_ca_file, GError **error)
{
        gnutls_certificate_credentials_t cred = NULL;
        int ret;

        if ((ret = gnutls_certificate_allocate_credentials (&cred)) < 0) {
                tls_fail (error, _ ("Could not set up TLS"), ret);
                return NULL;
        }
        /* A system without a trust store still works with an extra CA file. */
        (void) gnutls_certificate_set_x509_system_trust (cred);
        if (extra_ca_file && (ret = gnutls_certificate_set_x509_trust_file (
                                      cred, extra_ca_file, GNUTLS_X509_FMT_PEM)) <= 0) {
                gnutls_certificate_free_credentials (cred);
                g_set_error (error, CORRAL_EGRESS_ERROR, CORRAL_EGRESS_ERROR_INVALID,
                             _ ("Could not read CA certificates from %s"), extra_ca_file);
                return NULL;
        }
        return cred;
}
