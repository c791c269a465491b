public import AutoFill
import Foundation
import KeyhavenApp
public import KeyhavenSync
import NIOCore
import NIOFoundationCompat
import NIOPosix
import Synchronization
public import _KeyhavenSupport

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `keyhaven agent`: serves an ``AutoFillAgent`` (and its ``KeyhavenSession``) on a Unix socket
/// (0700 directory, 0600 socket, peer uid checked), and locks it when idle.
///
/// A connection is either a browser's (its first frame is the browser host's `host.hello`; then
/// the AutoFill protocol, sealed after `session.open`) or the CLI's, in the clear: typed
/// ``AgentCommand``s (unlock, lock, status, pairing codes, pairings) and the vault commands' typed
/// ``SessionRequest``s (``SessionProtocol``), answered by the session. Each frame is read once into
/// an ``AgentFrame``, which tells them apart. Only processes of the agent's own user can connect.
///
/// Connections are NIO channels on the shared event loop group, each served by a task of its own;
/// nothing here blocks a thread: the vault's work runs on the session's executor.
public final class AgentServer: Sendable {
    /// What `agent.ui` answers (`keyhaven ui`).
    public typealias WebAppLaunch = AgentReply.WebAppLaunch

    /// Starts the web app if needed (on the port asked for, 0: any) and returns a new launch, with
    /// a launch file when `launchFile` (`keyhaven ui`).
    public typealias WebAppLauncher = @Sendable (_ port: Int, _ launchFile: Bool) async throws -> WebAppLaunch

    public let agent: AutoFillAgent
    /// The socket's folder, checked before the agent listens (``AgentRuntimeDirectory``).
    public let runtimeDirectory: AgentRuntimeDirectory
    public var socketPath: String { runtimeDirectory.socketPath }
    let launchWebApp: WebAppLauncher?
    let version: String
    /// Syncs while the session is unlocked and sync is on (runs while the server serves).
    public let backgroundSync: BackgroundSync
    /// The listening descriptor and the inode of the socket file it made.
    let listener = Mutex<(descriptor: Int32, inode: ino_t)>((-1, 0))
    /// Stopped, the listening channel while it serves, and the connections accepted but not yet
    /// served.
    let running = Mutex<Running>(Running())

    struct Running {
        var stopped = false
        var channel: (any Channel)?
        /// Each accepted connection's async channel, from the moment it is made (on its event loop)
        /// until a task serves it. NIO hands accepted connections to the server through a stream,
        /// and a connection still in that stream when the server stops is dropped with it; an
        /// `NIOAsyncChannel` dropped before anyone finished its writer traps the process
        /// (swift-nio#2637). So the stream carries only the channel, the async channel waits here,
        /// and whatever is left when the server stops is closed by ``closeUnserved()``.
        var unserved: [ObjectIdentifier: NIOAsyncChannel<ByteBuffer, ByteBuffer>] = [:]
    }

    public init(
        agent: AutoFillAgent,
        runtimeDirectory: AgentRuntimeDirectory,
        version: String,
        launchWebApp: WebAppLauncher? = nil,
        backgroundSync: BackgroundSync? = nil
    ) {
        self.agent = agent
        self.runtimeDirectory = runtimeDirectory
        self.version = version
        self.launchWebApp = launchWebApp
        self.backgroundSync = backgroundSync ?? BackgroundSync(session: agent.session)
    }

    /// An agent on a socket path chosen by its caller (``AgentRuntimeDirectory/Kind/chosen``).
    public convenience init(
        agent: AutoFillAgent,
        socketPath: String,
        version: String,
        launchWebApp: WebAppLauncher? = nil
    ) {
        self.init(
            agent: agent,
            runtimeDirectory: AgentRuntimeDirectory(chosenSocket: socketPath),
            version: version,
            launchWebApp: launchWebApp
        )
    }

    /// Checks the socket's folder and binds the socket (throws when the folder is not the
    /// person's own or another agent answers there).
    public func bind() throws {
        let bound = try UnixSocket.listen(at: runtimeDirectory)
        listener.withLock { $0 = bound }
    }

    /// Serves connections until ``stop()``, and locks the session when it has been idle too long.
    ///
    /// Every task of the server prefers the session's executor (the one rule for blocking work,
    /// ``KeyhavenSession``): the agent never waits for Swift's cooperative pool, so a process whose
    /// pool is busy or blocked (a test that reads a socket synchronously) still gets its answers.
    public func serve() async throws {
        try await withTaskExecutorPreference(agent.session.taskExecutor) {
            try await serveOnSessionExecutor()
        }
    }

    func serveOnSessionExecutor() async throws {
        // The descriptor becomes the channel's: `stop()` closes it only while nobody serves it.
        let fd = listener.withLock { listener in
            defer { listener.descriptor = -1 }
            return listener.descriptor
        }
        guard fd >= 0 else { throw AgentError(.io, "the agent's socket is not bound") }
        if running.withLock({ $0.stopped }) {
            close(fd)
            return
        }
        let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            // A client that sends its last request and shuts down its side (the browser host at the
            // end of its input) still gets every answer: the end of input is not the end of output.
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .bind(fd) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(ByteToMessageHandler(FrameDecoder()))
                    try channel.pipeline.syncOperations.addHandler(MessageToByteHandler(FrameEncoder()))
                    try channel.pipeline.syncOperations.addHandler(InputWatcher())
                    let connection = try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                        wrappingChannelSynchronously: channel
                    )
                    let kept = self.running.withLock { state in
                        guard !state.stopped else { return false }
                        state.unserved[ObjectIdentifier(channel)] = connection
                        return true
                    }
                    if !kept { Self.finish(unserved: connection) }
                    return channel
                }
            }
        let alreadyStopped = running.withLock { state -> Bool in
            state.channel = server.channel
            return state.stopped
        }
        if alreadyStopped { try? await server.channel.close() }
        let session = agent.session
        let backgroundSync = self.backgroundSync
        try await withThrowingDiscardingTaskGroup { group in
            // Ends at the cancelAll below, when the server stops.
            group.addTask { await backgroundSync.run() }
            group.addTask {
                while !self.running.withLock({ $0.stopped }) {
                    try? await Task.sleep(for: .seconds(1))
                    await session.tick()
                }
            }
            defer { closeUnserved() }
            try await server.executeThenClose { connections in
                for try await channel in connections {
                    let unserved = running.withLock { $0.unserved.removeValue(forKey: ObjectIdentifier(channel)) }
                    guard let connection = unserved else { continue }
                    group.addTask { await self.serve(connection) }
                }
            }
            // Stopped: connections still open (a browser's, a client that never hangs up) end now;
            // the agent does not wait for their peers.
            closeUnserved()
            group.cancelAll()
        }
    }

    /// Stops the server taking connections and closes those accepted and never served.
    func closeUnserved() {
        let left = running.withLock { state in
            state.stopped = true
            defer { state.unserved = [:] }
            return Array(state.unserved.values)
        }
        for connection in left { Self.finish(unserved: connection) }
    }

    /// Closes an accepted connection nobody will serve, through `executeThenClose` (which finishes
    /// its writer, the one thing an `NIOAsyncChannel` must not be dropped without). The task holds
    /// the connection until then.
    static func finish(unserved connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) {
        Task { try? await connection.executeThenClose { _, _ in } }
    }

    /// Stops accepting, locks the session and removes the socket.
    public func stop() async {
        let channel = running.withLock { state -> (any Channel)? in
            guard !state.stopped else { return nil }
            state.stopped = true
            return state.channel
        }
        // The socket goes first: once the listener closes, the process may end at any moment. Only
        // the socket this agent made is removed (not one a later agent put there).
        // The descriptor is still ours only when `serve()` never took it.
        let (fd, inode) = listener.withLock { listener in
            defer { listener.descriptor = -1 }
            return listener
        }
        var info = stat()
        if inode != 0, lstat(socketPath, &info) == 0, info.st_ino == inode, info.st_mode & S_IFMT == S_IFSOCK {
            unlink(socketPath)
        }
        await agent.lock()
        if let channel {
            try? await channel.close()
        } else if fd >= 0 {
            close(fd)
        }
    }

    // MARK: Connections

    func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>) async {
        // Only processes of the agent's own user (the folder's mode already says so; the peer's
        // uid is checked anyway).
        guard await Self.peerUID(connection.channel) == getuid() else {
            try? await connection.executeThenClose { _, _ in }
            return
        }
        let watcher = try? await connection.channel.pipeline.handler(type: InputWatcher.self).get()
        try? await connection.executeThenClose { inbound, outbound in
            var frames = inbound.makeAsyncIterator()
            // The first frame says who calls (``AgentFrame``): the browser's host, or the CLI.
            guard let first = try await frames.next(), let opening = AgentFrame.read(Data(buffer: first)) else {
                return
            }
            if case .browserHost(let hello) = opening {
                switch hello {
                case .success(let hello):
                    try await BrowserConnection(server: self, hello: hello).run(&frames, outbound)
                case .failure(let error):
                    // A host of another version: told why (it relays this to the extension), then closed.
                    try await outbound.write(ByteBuffer(bytes: BrowserReply.json(id: nil, .failure(error)).encoded()))
                }
                return
            }
            var next: (Data, AgentFrame)? = (Data(buffer: first), opening)
            while case let (frame, message)? = next {
                switch message {
                case .session, .sessionParts:
                    var request = frame
                    if case .sessionParts = message {
                        // A message in parts: its frames, joined (a header it cannot serve ends the
                        // connection, with why).
                        let parts: Int
                        do {
                            parts = try SessionProtocol.parts(in: frame) ?? 0
                        } catch let error as SessionError {
                            try await outbound.write(ByteBuffer(bytes: SessionProtocol.encode(.failure(error), id: 0)))
                            return
                        } catch {
                            return
                        }
                        request = Data()
                        for _ in 0..<parts {
                            guard let part = try await frames.next() else { return }
                            request.append(Data(buffer: part))
                        }
                    }
                    for part in SessionProtocol.frames(
                        await answerSession(request, watching: watcher),
                        limit: Frames.maximumLength
                    ) {
                        try await outbound.write(ByteBuffer(bytes: part))
                    }
                case .command(let id, let command):
                    try await outbound.write(ByteBuffer(bytes: await answerCLI(id: id, command)))
                case .browserHost:
                    let refusal = AutoFillError(.badRequest, "host.hello opens a connection; it cannot come later.")
                    try await outbound.write(ByteBuffer(bytes: AgentResponse.encode(id: .null, .failure(refusal))))
                }
                guard let frame = try await frames.next(), let read = AgentFrame.read(Data(buffer: frame)) else {
                    return
                }
                next = (Data(buffer: frame), read)
            }
        }
    }

    /// The uid of the process at the other end (`SO_PEERCRED`: Linux's `struct ucred`, pid, uid and
    /// gid), nil when it cannot be read.
    static func peerUID(_ channel: any Channel) async -> uid_t? {
        struct PeerCredentials: Sendable {
            var pid: Int32 = 0
            var uid: UInt32 = 0
            var gid: UInt32 = 0
        }
        guard let provider = channel as? any SocketOptionProvider else { return nil }
        let credentials: PeerCredentials? = try? await provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET),
            name: SocketOptionName(17)  // SO_PEERCRED
        ).get()
        return credentials?.uid
    }

    /// One CLI request (`agent.*`), answered with `{ok}` (the command's ``AgentReply`` type) or
    /// `{error}`, and its `id` (``AgentResponse``).
    func answerCLI(id: JSONValue, _ command: Result<AgentCommand, AutoFillError>) async -> Data {
        do throws(AutoFillError) {
            let command = try command.get()
            let ok = try await cliAnswer(command)
            assert(
                ObjectIdentifier(type(of: ok)) == ObjectIdentifier(command.kind.replyType),
                "\(command.kind.type) answered with \(type(of: ok)), not its replyType"
            )
            return AgentResponse.encode(id: id, .success(ok))
        } catch {
            return AgentResponse.encode(id: id, .failure(error))
        }
    }

    func cliAnswer(_ command: AgentCommand) async throws(AutoFillError) -> any Codable & Sendable {
        switch command {
        case .status:
            var status = AgentReply.Status(
                session: await agent.status(),
                agentVersion: version,
                socket: socketPath,
                pid: Int(getpid())
            )
            status.sync = backgroundSync.state
            return status
        case .unlock(let password):
            try await agent.unlock(masterPassword: password)
            return AgentReply.State(.unlocked)
        case .lock:
            await agent.lock()
            return AgentReply.State(.locked)
        case .stop:
            Task {
                try? await Task.sleep(for: .milliseconds(100))
                await self.stop()
            }
            return AgentReply.State(.stopped)
        case .pairCode(let timeoutSeconds):
            guard await agent.isUnlocked else {
                throw AutoFillError(.locked, "Keyhaven is locked: run `keyhaven unlock`.")
            }
            let timeout = timeoutSeconds ?? 120
            guard let (code, name) = await agent.waitForPairingCode(timeout: timeout) else {
                throw AutoFillError(
                    .userCanceled,
                    "No browser asked to pair within \(Int(timeout)) seconds: click Pair in Keyhaven's browser extension."
                )
            }
            return AgentReply.PairingCode(code: code, clientName: name)
        case .pairings:
            return try await agent.pairings().map(AgentReply.Pairing.init)
        case .revokePairing(let id):
            try await agent.revokePairing(id)
            return AgentReply.Revoked(revoked: id)
        case .sites:
            return await agent.sites()
        case .ui(let port, let launchFile):
            guard let launchWebApp else { throw AutoFillError(.failed, "This agent does not serve the web app.") }
            do {
                return try await launchWebApp(port ?? 0, launchFile ?? false)
            } catch {
                throw AutoFillError(.failed, "\(error)")
            }
        }
    }

    /// A vault command's typed request (``SessionProtocol``), answered by the session (sync's
    /// requests by its sync: ``KeyhavenSync``); a request of another protocol version is refused.
    func answerSession(_ frame: Data, watching watcher: InputWatcher? = nil) async -> Data {
        let (id, decoded) = SessionProtocol.decodeRequest(frame)
        let response: SessionResponse
        switch decoded {
        case .success(let request):
            if case .syncJoin = request, let watcher {
                // `sync join` waits minutes for an approval: when its CLI goes away (Ctrl-C), the
                // join stops here too, before it enrols (docs/sync.md "A device joins").
                let session = agent.session
                // On the session's executor, as every request of the agent's: never waiting for
                // a thread of the cooperative pool.
                let task = Task(executorPreference: session.taskExecutor) { await session.answerWithSync(request) }
                watcher.onClose { task.cancel() }
                response = await task.value
                watcher.onClose(nil)
            } else {
                response = await agent.session.answerWithSync(request)
            }
        case .failure(let error): response = .failure(error)
        }
        return SessionProtocol.encode(response, id: id)
    }
}

/// Notes the end of a connection's input: the client closed its side or its process ended (the
/// socket allows half-closure, so the channel itself stays open). A long request whose client is
/// gone (`sync join` waiting for an approval) is cancelled rather than finished unseen.
final class InputWatcher: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private struct State {
        var closed = false
        var onClose: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        context.fireChannelRead(data)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed { closed() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        closed()
        context.fireChannelInactive()
    }

    /// Runs `body` once the input ends, at once when it has already; nil forgets it.
    func onClose(_ body: (@Sendable () -> Void)?) {
        let now = state.withLock { state -> Bool in
            state.onClose = state.closed ? nil : body
            return state.closed
        }
        if now { body?() }
    }

    private func closed() {
        let body = state.withLock { state -> (@Sendable () -> Void)? in
            state.closed = true
            defer { state.onClose = nil }
            return state.onClose
        }
        body?()
    }
}

/// Cuts the socket's frames (a 4-byte little-endian length, then that many bytes; 1 MiB at most,
/// never empty) out of the byte stream.
struct FrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, endianness: .little, as: UInt32.self) else {
            return .needMoreData
        }
        guard length > 0 else { throw FrameError(code: .empty) }
        guard length <= Frames.maximumLength else { throw FrameError(code: .tooLong) }
        guard buffer.readableBytes >= 4 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 4)
        context.fireChannelRead(Self.wrapInboundOut(buffer.readSlice(length: Int(length))!))
        return .continue
    }

    mutating func decodeLast(
        context: ChannelHandlerContext,
        buffer: inout ByteBuffer,
        seenEOF: Bool
    ) throws -> DecodingState {
        while try decode(context: context, buffer: &buffer) == .continue {}
        if buffer.readableBytes > 0 { throw FrameError(code: .truncated) }
        return .needMoreData
    }
}

/// Writes one frame per message (``FrameDecoder``'s format).
struct FrameEncoder: MessageToByteEncoder {
    typealias OutboundIn = ByteBuffer

    func encode(data: ByteBuffer, out: inout ByteBuffer) throws {
        guard data.readableBytes > 0, data.readableBytes <= Frames.maximumLength else {
            throw FrameError(code: .tooLong)
        }
        out.writeInteger(UInt32(data.readableBytes), endianness: .little)
        out.writeImmutableBuffer(data)
    }
}
