#include "tools/serve/connection.h"

#include <cerrno>
#include <chrono>
#include <cstring>

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>

namespace ember::serve {
namespace {

std::string mbedtls_reason(int code) {
  char buf[200];
  mbedtls_strerror(code, buf, sizeof buf);
  return buf;
}

}  // namespace

TlsConfig::TlsConfig() {
  mbedtls_x509_crt_init(&cert_);
  mbedtls_pk_init(&key_);
  mbedtls_entropy_init(&entropy_);
  mbedtls_ctr_drbg_init(&drbg_);
  mbedtls_ssl_config_init(&conf_);
}

TlsConfig::~TlsConfig() {
  mbedtls_ssl_config_free(&conf_);
  mbedtls_ctr_drbg_free(&drbg_);
  mbedtls_entropy_free(&entropy_);
  mbedtls_pk_free(&key_);
  mbedtls_x509_crt_free(&cert_);
}

int TlsConfig::random(void* self, unsigned char* out, size_t n) {
  auto* c = static_cast<TlsConfig*>(self);
  std::lock_guard<std::mutex> lock(c->rng_mutex_);
  return mbedtls_ctr_drbg_random(&c->drbg_, out, n);
}

bool TlsConfig::load(const std::string& cert_path, const std::string& key_path, std::string* error) {
  static const char kPers[] = "ember serve";
  int rc = mbedtls_ctr_drbg_seed(&drbg_, mbedtls_entropy_func, &entropy_, reinterpret_cast<const unsigned char*>(kPers),
                                 sizeof kPers - 1);
  if (rc != 0) {
    *error = "TLS: seeding the random generator: " + mbedtls_reason(rc);
    return false;
  }
  if ((rc = mbedtls_x509_crt_parse_file(&cert_, cert_path.c_str())) != 0) {
    *error = "--tls-cert '" + cert_path + "': " + mbedtls_reason(rc);
    return false;
  }
  if ((rc = mbedtls_pk_parse_keyfile(&key_, key_path.c_str(), nullptr)) != 0) {
    *error = "--tls-key '" + key_path + "': " + mbedtls_reason(rc);
    return false;
  }
  if ((rc = mbedtls_ssl_config_defaults(&conf_, MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_TRANSPORT_STREAM,
                                        MBEDTLS_SSL_PRESET_DEFAULT)) != 0) {
    *error = "TLS: configuration: " + mbedtls_reason(rc);
    return false;
  }
  mbedtls_ssl_conf_rng(&conf_, random, this);
  mbedtls_ssl_conf_min_version(&conf_, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);  // TLS 1.2+
  if ((rc = mbedtls_ssl_conf_own_cert(&conf_, &cert_, &key_)) != 0) {
    *error = "--tls-cert/--tls-key: the key does not fit the certificate: " + mbedtls_reason(rc);
    return false;
  }
  return true;
}

Connection::Connection(int fd, const TlsConfig* tls) : fd_(fd), tls_(tls != nullptr) {
  mbedtls_ssl_init(&ssl_);
  if (tls_) {
    if (mbedtls_ssl_setup(&ssl_, tls->config()) != 0) {
      ::shutdown(fd_, SHUT_RDWR);  // handshake() then fails
    }
    mbedtls_ssl_set_bio(&ssl_, this, send_cb, recv_cb, nullptr);
  }
}

Connection::~Connection() {
  if (tls_) mbedtls_ssl_close_notify(&ssl_);
  mbedtls_ssl_free(&ssl_);
  // A lingering close: stop sending, then discard what the client still
  // sends (a refused body) for a moment, so that closing with unread bytes
  // does not reset the connection before the client reads our answer.
  ::shutdown(fd_, SHUT_WR);
  char sink[4096];
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
  size_t drained = 0;
  while (drained < (1u << 20) && std::chrono::steady_clock::now() < end) {
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) break;
    const ssize_t r = ::recv(fd_, sink, sizeof sink, MSG_DONTWAIT);
    if (r <= 0) break;
    drained += static_cast<size_t>(r);
  }
  ::close(fd_);
}

int Connection::send_cb(void* self, const unsigned char* buf, size_t n) {
  const ssize_t r = ::send(static_cast<Connection*>(self)->fd_, buf, n, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (r >= 0) return static_cast<int>(r);
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return MBEDTLS_ERR_SSL_WANT_WRITE;
  return MBEDTLS_ERR_NET_SEND_FAILED;
}

int Connection::recv_cb(void* self, unsigned char* buf, size_t n) {
  const ssize_t r = ::recv(static_cast<Connection*>(self)->fd_, buf, n, MSG_DONTWAIT);
  if (r >= 0) return static_cast<int>(r);
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return MBEDTLS_ERR_SSL_WANT_READ;
  return MBEDTLS_ERR_NET_RECV_FAILED;
}

bool Connection::wait(short events, int timeout_ms) {
  pollfd p{fd_, events, 0};
  int r;
  do {
    r = ::poll(&p, 1, timeout_ms);
  } while (r < 0 && errno == EINTR);
  return r > 0;
}

bool Connection::handshake(int timeout_ms) {
  if (!tls_) return true;
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    const int rc = mbedtls_ssl_handshake(&ssl_);
    if (rc == 0) return true;
    if (rc != MBEDTLS_ERR_SSL_WANT_READ && rc != MBEDTLS_ERR_SSL_WANT_WRITE) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    if (!wait(rc == MBEDTLS_ERR_SSL_WANT_READ ? POLLIN : POLLOUT, static_cast<int>(left.count()))) return false;
  }
}

long Connection::read(char* buf, size_t n, int timeout_ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    if (!tls_ || mbedtls_ssl_get_bytes_avail(&ssl_) == 0) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
      if (!wait(POLLIN, left.count() > 0 ? static_cast<int>(left.count()) : 0)) return -2;
    }
    if (!tls_) {
      const ssize_t r = ::recv(fd_, buf, n, MSG_DONTWAIT);
      if (r >= 0) return static_cast<long>(r);
      if (errno == EAGAIN || errno == EINTR) continue;
      return -1;
    }
    const int rc = mbedtls_ssl_read(&ssl_, reinterpret_cast<unsigned char*>(buf), n);
    if (rc > 0) return rc;
    if (rc == 0 || rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY) return 0;
    if (rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE) {
      if (std::chrono::steady_clock::now() >= end) return -2;
      continue;
    }
    return -1;
  }
}

bool Connection::write_all(const char* data, size_t n, int timeout_ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  size_t done = 0;
  while (done < n) {
    long r;
    if (tls_) {
      r = mbedtls_ssl_write(&ssl_, reinterpret_cast<const unsigned char*>(data + done), n - done);
      if (r == MBEDTLS_ERR_SSL_WANT_WRITE || r == MBEDTLS_ERR_SSL_WANT_READ) r = -2;
    } else {
      r = ::send(fd_, data + done, n - done, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (r < 0 && (errno == EAGAIN || errno == EINTR)) r = -2;
    }
    if (r == -2) {
      while (true) {
        if (abort_ && abort_->load()) return false;
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
        if (left.count() <= 0) return false;
        if (wait(POLLOUT, static_cast<int>(left.count() < 250 ? left.count() : 250))) break;
      }
      continue;
    }
    if (r <= 0) return false;
    done += static_cast<size_t>(r);
  }
  return true;
}

bool Connection::reset_by_peer() {
  // POLLERR: a reset (or another error) is pending; POLLHUP: both
  // directions are shut, which for a socket we have not shut ourselves means
  // reset too. A FIN alone gives POLLIN with recv() == 0: not gone.
  pollfd p{fd_, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLERR | POLLHUP)) != 0;
}

}  // namespace ember::serve
