// A client connection of `ember serve`: a TCP socket, optionally wrapped in
// TLS by mbedTLS (ember's crypto library already; Debian's libmbedtls-dev
// has the TLS and X.509 parts as static archives too).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

namespace ember::serve {

// The server's TLS configuration: certificate chain and key (PEM files).
class TlsConfig {
 public:
  TlsConfig();
  ~TlsConfig();
  TlsConfig(const TlsConfig&) = delete;
  TlsConfig& operator=(const TlsConfig&) = delete;
  // Errors name the file and mbedTLS's reason.
  bool load(const std::string& cert_path, const std::string& key_path, std::string* error);
  const mbedtls_ssl_config* config() const { return &conf_; }

 private:
  static int random(void* self, unsigned char* out, size_t n);
  mbedtls_x509_crt cert_;
  mbedtls_pk_context key_;
  mbedtls_entropy_context entropy_;
  mbedtls_ctr_drbg_context drbg_;
  mbedtls_ssl_config conf_;
  std::mutex rng_mutex_;  // the DRBG is shared by the connections' threads
};

class Connection {
 public:
  // Takes the socket. tls may be nullptr (plain HTTP).
  Connection(int fd, const TlsConfig* tls);
  ~Connection();
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  // The TLS handshake (a no-op for plain HTTP), within timeout_ms.
  bool handshake(int timeout_ms);
  // Reads up to n bytes, waiting at most timeout_ms. Returns the count, 0
  // when the peer closed, -1 on an error, -2 on a timeout.
  long read(char* buf, size_t n, int timeout_ms);
  // Writes everything (or fails: the peer is gone, stalled past timeout_ms,
  // or the abort flag was raised).
  bool write_all(const char* data, size_t n, int timeout_ms = 30000);
  bool write_all(const std::string& s) { return write_all(s.data(), s.size()); }
  // Without waiting: whether the connection was reset (or failed). A peer
  // that only closed its sending side (a FIN: `nc -N`, some HTTP/1.0
  // clients, or one that has gone, which only a write tells apart) still
  // reads the answer: that is not "gone".
  bool reset_by_peer();
  // While *flag is true, write_all gives up (checked every 250 ms). The
  // flag must outlive the connection.
  void set_abort(const std::atomic<bool>* flag) { abort_ = flag; }
  int fd() const { return fd_; }

 private:
  static int send_cb(void* self, const unsigned char* buf, size_t n);
  static int recv_cb(void* self, unsigned char* buf, size_t n);
  bool wait(short events, int timeout_ms);
  int fd_;
  bool tls_ = false;
  const std::atomic<bool>* abort_ = nullptr;
  mbedtls_ssl_context ssl_;
};

}  // namespace ember::serve
