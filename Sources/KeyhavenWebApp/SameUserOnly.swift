import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Closes a connection to the web app that a process of another user opened, before a byte of it
/// is read: defence in depth behind the session's secrets (docs/web-app.md). Loopback TCP has no
/// `SO_PEERCRED`; on Linux the owner of the client's socket is in `/proc/net/tcp(6)`, found by the
/// connection's two ends (``LoopbackTCP/owner(ofClient:connectedTo:in:)``).
///
/// The lookup reads a file, so it runs on NIO's thread pool, never on the event loop; meanwhile
/// the handler holds back the channel's `read`s, so no request is parsed, let alone answered,
/// until the owner is known. A connection whose client is not found in the tables (it left
/// already) is closed too. Where the tables cannot be read at all (no `/proc`), the check is
/// skipped: the session still needs its cookie and its capability.
final class SameUserOnly: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny
    typealias OutboundIn = NIOAny

    private enum Verdict {
        case unasked, pending, allowed
    }

    private var verdict = Verdict.unasked
    private var readHeld = false
    private let uid: UInt32

    init(uid: UInt32 = getuid()) {
        self.uid = uid
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { ask(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        ask(context)
        context.fireChannelActive()
    }

    func read(context: ChannelHandlerContext) {
        guard verdict == .allowed else {
            readHeld = true
            return
        }
        context.read()
    }

    private func ask(_ context: ChannelHandlerContext) {
        guard verdict == .unasked else { return }
        verdict = .pending
        guard let client = context.channel.remoteAddress.flatMap(Self.endpoint),
            let server = context.channel.localAddress.flatMap(Self.endpoint)
        else {
            context.close(promise: nil)
            return
        }
        let uid = self.uid
        NIOThreadPool.singleton.runIfActive(eventLoop: context.eventLoop) { () -> Bool in
            guard let sockets = LoopbackTCP.read() else { return true }
            return LoopbackTCP.owner(ofClient: client, connectedTo: server, in: sockets) == uid
        }
        .assumeIsolated()
        .whenComplete { result in
            guard case .success(true) = result else {
                context.close(promise: nil)
                return
            }
            self.verdict = .allowed
            if self.readHeld {
                self.readHeld = false
                context.read()
            }
        }
    }

    /// A NIO address as the tables write it.
    static func endpoint(_ address: SocketAddress) -> LoopbackTCP.Endpoint? {
        guard let port = address.port, let port = UInt16(exactly: port) else { return nil }
        switch address {
        case .v4(let v4):
            return LoopbackTCP.Endpoint(address: withUnsafeBytes(of: v4.address.sin_addr) { Array($0) }, port: port)
        case .v6(let v6):
            return LoopbackTCP.Endpoint(address: withUnsafeBytes(of: v6.address.sin6_addr) { Array($0) }, port: port)
        default:
            return nil
        }
    }
}
