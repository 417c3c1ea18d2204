/* Names of tags, MsgTypes and common enumerated values (FIX 4.2 / 4.4),
 * for `tickwire fix decode`, `fix check` and error messages.  Not on any
 * hot path. */
#include "fix_internal.h"

typedef struct tag_name {
    uint32_t tag;
    const char *name;
} tag_name;

/* Sorted by tag (tests/fix checks the order); binary searched. */
static const tag_name tags[] = {
    { 1, "Account" }, { 2, "AdvId" }, { 3, "AdvRefID" }, { 4, "AdvSide" },
    { 5, "AdvTransType" }, { 6, "AvgPx" }, { 7, "BeginSeqNo" }, { 8, "BeginString" },
    { 9, "BodyLength" }, { 10, "CheckSum" }, { 11, "ClOrdID" }, { 12, "Commission" },
    { 13, "CommType" }, { 14, "CumQty" }, { 15, "Currency" }, { 16, "EndSeqNo" },
    { 17, "ExecID" }, { 18, "ExecInst" }, { 19, "ExecRefID" }, { 20, "ExecTransType" },
    { 21, "HandlInst" }, { 22, "SecurityIDSource" }, { 23, "IOIID" }, { 25, "IOIQltyInd" },
    { 26, "IOIRefID" }, { 27, "IOIQty" }, { 28, "IOITransType" }, { 29, "LastCapacity" },
    { 30, "LastMkt" }, { 31, "LastPx" }, { 32, "LastQty" }, { 33, "NoLinesOfText" },
    { 34, "MsgSeqNum" }, { 35, "MsgType" }, { 36, "NewSeqNo" }, { 37, "OrderID" },
    { 38, "OrderQty" }, { 39, "OrdStatus" }, { 40, "OrdType" }, { 41, "OrigClOrdID" },
    { 42, "OrigTime" }, { 43, "PossDupFlag" }, { 44, "Price" }, { 45, "RefSeqNum" },
    { 48, "SecurityID" }, { 49, "SenderCompID" }, { 50, "SenderSubID" }, { 52, "SendingTime" },
    { 53, "Quantity" }, { 54, "Side" }, { 55, "Symbol" }, { 56, "TargetCompID" },
    { 57, "TargetSubID" }, { 58, "Text" }, { 59, "TimeInForce" }, { 60, "TransactTime" },
    { 61, "Urgency" }, { 62, "ValidUntilTime" }, { 63, "SettlType" }, { 64, "SettlDate" },
    { 65, "SymbolSfx" }, { 66, "ListID" }, { 67, "ListSeqNo" }, { 68, "TotNoOrders" },
    { 69, "ListExecInst" }, { 70, "AllocID" }, { 71, "AllocTransType" }, { 72, "RefAllocID" },
    { 73, "NoOrders" }, { 74, "AvgPxPrecision" }, { 75, "TradeDate" }, { 76, "ExecBroker" },
    { 77, "PositionEffect" }, { 78, "NoAllocs" }, { 79, "AllocAccount" }, { 80, "AllocQty" },
    { 81, "ProcessCode" }, { 82, "NoRpts" }, { 83, "RptSeq" }, { 84, "CxlQty" },
    { 87, "AllocStatus" }, { 88, "AllocRejCode" }, { 89, "Signature" }, { 90, "SecureDataLen" },
    { 91, "SecureData" }, { 93, "SignatureLength" }, { 94, "EmailType" },
    { 95, "RawDataLength" }, { 96, "RawData" }, { 97, "PossResend" }, { 98, "EncryptMethod" },
    { 99, "StopPx" }, { 100, "ExDestination" }, { 102, "CxlRejReason" },
    { 103, "OrdRejReason" }, { 104, "IOIQualifier" }, { 106, "Issuer" },
    { 107, "SecurityDesc" }, { 108, "HeartBtInt" }, { 110, "MinQty" }, { 111, "MaxFloor" },
    { 112, "TestReqID" }, { 113, "ReportToExch" }, { 114, "LocateReqd" },
    { 115, "OnBehalfOfCompID" }, { 116, "OnBehalfOfSubID" }, { 117, "QuoteID" },
    { 118, "NetMoney" }, { 119, "SettlCurrAmt" }, { 120, "SettlCurrency" }, { 121, "ForexReq" },
    { 122, "OrigSendingTime" }, { 123, "GapFillFlag" }, { 124, "NoExecs" },
    { 126, "ExpireTime" }, { 127, "DKReason" }, { 128, "DeliverToCompID" },
    { 129, "DeliverToSubID" }, { 130, "IOINaturalFlag" }, { 131, "QuoteReqID" },
    { 132, "BidPx" }, { 133, "OfferPx" }, { 134, "BidSize" }, { 135, "OfferSize" },
    { 136, "NoMiscFees" }, { 137, "MiscFeeAmt" }, { 138, "MiscFeeCurr" },
    { 139, "MiscFeeType" }, { 140, "PrevClosePx" }, { 141, "ResetSeqNumFlag" },
    { 142, "SenderLocationID" }, { 143, "TargetLocationID" }, { 144, "OnBehalfOfLocationID" },
    { 145, "DeliverToLocationID" }, { 146, "NoRelatedSym" }, { 147, "Subject" },
    { 148, "Headline" }, { 149, "URLLink" }, { 150, "ExecType" }, { 151, "LeavesQty" },
    { 152, "CashOrderQty" }, { 153, "AllocAvgPx" }, { 154, "AllocNetMoney" },
    { 155, "SettlCurrFxRate" }, { 156, "SettlCurrFxRateCalc" }, { 157, "NumDaysInterest" },
    { 158, "AccruedInterestRate" }, { 159, "AccruedInterestAmt" }, { 160, "SettlInstMode" },
    { 161, "AllocText" }, { 162, "SettlInstID" }, { 163, "SettlInstTransType" },
    { 164, "EmailThreadID" }, { 167, "SecurityType" }, { 168, "EffectiveTime" },
    { 169, "StandInstDbType" }, { 170, "StandInstDbName" }, { 171, "StandInstDbID" },
    { 172, "SettlDeliveryType" }, { 188, "BidSpotRate" }, { 189, "BidForwardPoints" },
    { 190, "OfferSpotRate" }, { 191, "OfferForwardPoints" }, { 192, "OrderQty2" },
    { 193, "SettlDate2" }, { 194, "LastSpotRate" }, { 195, "LastForwardPoints" },
    { 196, "AllocLinkID" }, { 197, "AllocLinkType" }, { 198, "SecondaryOrderID" },
    { 199, "NoIOIQualifiers" }, { 200, "MaturityMonthYear" }, { 201, "PutOrCall" },
    { 202, "StrikePrice" }, { 203, "CoveredOrUncovered" }, { 205, "MaturityDay" },
    { 206, "OptAttribute" }, { 207, "SecurityExchange" }, { 208, "NotifyBrokerOfCredit" },
    { 209, "AllocHandlInst" }, { 210, "MaxShow" }, { 211, "PegOffsetValue" },
    { 212, "XmlDataLen" }, { 213, "XmlData" }, { 214, "SettlInstRefID" },
    { 215, "NoRoutingIDs" }, { 216, "RoutingType" }, { 217, "RoutingID" }, { 218, "Spread" },
    { 220, "BenchmarkCurveCurrency" }, { 221, "BenchmarkCurveName" },
    { 222, "BenchmarkCurvePoint" }, { 223, "CouponRate" }, { 224, "CouponPaymentDate" },
    { 225, "IssueDate" }, { 226, "RepurchaseTerm" }, { 227, "RepurchaseRate" },
    { 228, "Factor" }, { 229, "TradeOriginationDate" }, { 230, "ExDate" },
    { 231, "ContractMultiplier" }, { 232, "NoStipulations" }, { 233, "StipulationType" },
    { 234, "StipulationValue" }, { 235, "YieldType" }, { 236, "Yield" },
    { 237, "TotalTakedown" }, { 238, "Concession" }, { 239, "RepoCollateralSecurityType" },
    { 240, "RedemptionDate" }, { 241, "UnderlyingCouponPaymentDate" },
    { 242, "UnderlyingIssueDate" }, { 243, "UnderlyingRepoCollateralSecurityType" },
    { 244, "UnderlyingRepurchaseTerm" }, { 245, "UnderlyingRepurchaseRate" },
    { 246, "UnderlyingFactor" }, { 247, "UnderlyingRedemptionDate" },
    { 248, "LegCouponPaymentDate" }, { 249, "LegIssueDate" },
    { 250, "LegRepoCollateralSecurityType" }, { 251, "LegRepurchaseTerm" },
    { 252, "LegRepurchaseRate" }, { 253, "LegFactor" }, { 254, "LegRedemptionDate" },
    { 255, "CreditRating" }, { 256, "UnderlyingCreditRating" }, { 257, "LegCreditRating" },
    { 258, "TradedFlatSwitch" }, { 259, "BasisFeatureDate" }, { 260, "BasisFeaturePrice" },
    { 262, "MDReqID" }, { 263, "SubscriptionRequestType" }, { 264, "MarketDepth" },
    { 265, "MDUpdateType" }, { 266, "AggregatedBook" }, { 267, "NoMDEntryTypes" },
    { 268, "NoMDEntries" }, { 269, "MDEntryType" }, { 270, "MDEntryPx" },
    { 271, "MDEntrySize" }, { 272, "MDEntryDate" }, { 273, "MDEntryTime" },
    { 274, "TickDirection" }, { 275, "MDMkt" }, { 276, "QuoteCondition" },
    { 277, "TradeCondition" }, { 278, "MDEntryID" }, { 279, "MDUpdateAction" },
    { 280, "MDEntryRefID" }, { 281, "MDReqRejReason" }, { 282, "MDEntryOriginator" },
    { 283, "LocationID" }, { 284, "DeskID" }, { 285, "DeleteReason" },
    { 286, "OpenCloseSettlFlag" }, { 287, "SellerDays" }, { 288, "MDEntryBuyer" },
    { 289, "MDEntrySeller" }, { 290, "MDEntryPositionNo" }, { 291, "FinancialStatus" },
    { 292, "CorporateAction" }, { 293, "DefBidSize" }, { 294, "DefOfferSize" },
    { 295, "NoQuoteEntries" }, { 296, "NoQuoteSets" }, { 297, "QuoteStatus" },
    { 298, "QuoteCancelType" }, { 299, "QuoteEntryID" }, { 300, "QuoteRejectReason" },
    { 301, "QuoteResponseLevel" }, { 302, "QuoteSetID" }, { 303, "QuoteRequestType" },
    { 304, "TotNoQuoteEntries" }, { 305, "UnderlyingSecurityIDSource" },
    { 306, "UnderlyingIssuer" }, { 307, "UnderlyingSecurityDesc" },
    { 308, "UnderlyingSecurityExchange" }, { 309, "UnderlyingSecurityID" },
    { 310, "UnderlyingSecurityType" }, { 311, "UnderlyingSymbol" },
    { 312, "UnderlyingSymbolSfx" }, { 313, "UnderlyingMaturityMonthYear" },
    { 315, "UnderlyingPutOrCall" }, { 316, "UnderlyingStrikePrice" },
    { 317, "UnderlyingOptAttribute" }, { 318, "UnderlyingCurrency" }, { 320, "SecurityReqID" },
    { 321, "SecurityRequestType" }, { 322, "SecurityResponseID" },
    { 323, "SecurityResponseType" }, { 324, "SecurityStatusReqID" },
    { 325, "UnsolicitedIndicator" }, { 326, "SecurityTradingStatus" }, { 327, "HaltReason" },
    { 328, "InViewOfCommon" }, { 329, "DueToRelated" }, { 330, "BuyVolume" },
    { 331, "SellVolume" }, { 332, "HighPx" }, { 333, "LowPx" }, { 334, "Adjustment" },
    { 335, "TradSesReqID" }, { 336, "TradingSessionID" }, { 337, "ContraTrader" },
    { 338, "TradSesMethod" }, { 339, "TradSesMode" }, { 340, "TradSesStatus" },
    { 341, "TradSesStartTime" }, { 342, "TradSesOpenTime" }, { 343, "TradSesPreCloseTime" },
    { 344, "TradSesCloseTime" }, { 345, "TradSesEndTime" }, { 346, "NumberOfOrders" },
    { 347, "MessageEncoding" }, { 354, "EncodedTextLen" }, { 355, "EncodedText" },
    { 369, "LastMsgSeqNumProcessed" }, { 371, "RefTagID" }, { 372, "RefMsgType" },
    { 373, "SessionRejectReason" }, { 374, "BidRequestTransType" }, { 375, "ContraBroker" },
    { 376, "ComplianceID" }, { 377, "SolicitedFlag" }, { 378, "ExecRestatementReason" },
    { 379, "BusinessRejectRefID" }, { 380, "BusinessRejectReason" }, { 381, "GrossTradeAmt" },
    { 382, "NoContraBrokers" }, { 383, "MaxMessageSize" }, { 384, "NoMsgTypes" },
    { 385, "MsgDirection" }, { 386, "NoTradingSessions" }, { 387, "TotalVolumeTraded" },
    { 388, "DiscretionInst" }, { 389, "DiscretionOffsetValue" }, { 390, "BidID" },
    { 391, "ClientBidID" }, { 392, "ListName" }, { 393, "TotNoRelatedSym" }, { 394, "BidType" },
    { 395, "NumTickets" }, { 396, "SideValue1" }, { 397, "SideValue2" },
    { 398, "NoBidDescriptors" }, { 399, "BidDescriptorType" }, { 400, "BidDescriptor" },
    { 401, "SideValueInd" }, { 402, "LiquidityPctLow" }, { 403, "LiquidityPctHigh" },
    { 404, "LiquidityValue" }, { 405, "EFPTrackingError" }, { 406, "FairValue" },
    { 407, "OutsideIndexPct" }, { 408, "ValueOfFutures" }, { 409, "LiquidityIndType" },
    { 410, "WtAverageLiquidity" }, { 411, "ExchangeForPhysical" },
    { 412, "OutMainCntryUIndex" }, { 413, "CrossPercent" }, { 414, "ProgRptReqs" },
    { 415, "ProgPeriodInterval" }, { 416, "IncTaxInd" }, { 417, "NumBidders" },
    { 418, "BidTradeType" }, { 419, "BasisPxType" }, { 420, "NoBidComponents" },
    { 421, "Country" }, { 422, "TotNoStrikes" }, { 423, "PriceType" }, { 424, "DayOrderQty" },
    { 425, "DayCumQty" }, { 426, "DayAvgPx" }, { 427, "GTBookingInst" }, { 428, "NoStrikes" },
    { 429, "ListStatusType" }, { 430, "NetGrossInd" }, { 431, "ListOrderStatus" },
    { 432, "ExpireDate" }, { 433, "ListExecInstType" }, { 434, "CxlRejResponseTo" },
    { 435, "UnderlyingCouponRate" }, { 436, "UnderlyingContractMultiplier" },
    { 437, "ContraTradeQty" }, { 438, "ContraTradeTime" }, { 441, "LiquidityNumSecurities" },
    { 442, "MultiLegReportingType" }, { 443, "StrikeTime" }, { 444, "ListStatusText" },
    { 447, "PartyIDSource" }, { 448, "PartyID" }, { 451, "NetChgPrevDay" },
    { 452, "PartyRole" }, { 453, "NoPartyIDs" }, { 454, "NoSecurityAltID" },
    { 455, "SecurityAltID" }, { 456, "SecurityAltIDSource" }, { 460, "Product" },
    { 461, "CFICode" }, { 470, "CountryOfIssue" }, { 471, "StateOrProvinceOfIssue" },
    { 472, "LocaleOfIssue" }, { 541, "MaturityDate" }, { 553, "Username" }, { 554, "Password" },
    { 555, "NoLegs" }, { 559, "SecurityListRequestType" }, { 560, "SecurityRequestResult" },
    { 581, "AccountType" }, { 582, "CustOrderCapacity" }, { 583, "ClOrdLinkID" },
    { 584, "MassStatusReqID" }, { 585, "MassStatusReqType" }, { 586, "OrigOrdModTime" },
    { 589, "DayBookingInst" }, { 590, "BookingUnit" }, { 591, "PreallocMethod" },
    { 600, "LegSymbol" }, { 625, "TradingSessionSubID" }, { 635, "ClearingFeeIndicator" },
    { 636, "WorkingIndicator" }, { 660, "AcctIDSource" }, { 662, "BenchmarkPrice" },
    { 663, "BenchmarkPriceType" }, { 664, "ConfirmID" }, { 706, "PosAmtType" },
    { 707, "PosAmt" }, { 721, "PosMaintRptID" }, { 789, "NextExpectedMsgSeqNum" },
    { 790, "OrdStatusReqID" }, { 797, "CopyMsgIndicator" }, { 828, "TrdType" },
    { 851, "LastLiquidityInd" }, { 854, "QtyType" }, { 1003, "TradeID" },
    { 1023, "MDPriceLevel" }, { 1057, "AggressorIndicator" }, { 1070, "MDQuoteType" },
    { 1128, "ApplVerID" }, { 1137, "DefaultApplVerID" },
};

const char *tw_fix_tag_name(uint32_t tag)
{
    size_t lo = 0, hi = TW_ARRAY_SIZE(tags);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (tags[mid].tag < tag)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < TW_ARRAY_SIZE(tags) && tags[lo].tag == tag ? tags[lo].name : NULL;
}

int tw_fix_tag_is_price(uint32_t tag)
{
    /* FIX 4.4 fields of type Price or PriceOffset. */
    switch (tag) {
    case 6:    /* AvgPx */
    case 31:   /* LastPx */
    case 44:   /* Price */
    case 99:   /* StopPx */
    case 132:  /* BidPx */
    case 133:  /* OfferPx */
    case 140:  /* PrevClosePx */
    case 153:  /* AllocAvgPx */
    case 188:  /* BidSpotRate */
    case 189:  /* BidForwardPoints */
    case 190:  /* OfferSpotRate */
    case 191:  /* OfferForwardPoints */
    case 194:  /* LastSpotRate */
    case 195:  /* LastForwardPoints */
    case 202:  /* StrikePrice */
    case 218:  /* Spread */
    case 270:  /* MDEntryPx */
    case 332:  /* HighPx */
    case 333:  /* LowPx */
    case 366:  /* AllocPrice */
    case 426:  /* DayAvgPx */
    case 631:  /* MidPx */
    case 640:  /* Price2 */
    case 645:  /* MktBidPx */
    case 646:  /* MktOfferPx */
    case 669:  /* LastParPx */
    case 730:  /* SettlPrice */
    case 734:  /* PriorSettlPrice */
    case 799:  /* OrderAvgPx */
    case 860:  /* AvgParPx */
        return 1;
    default:
        return 0;
    }
}

/* For tests: the table must stay sorted for the search above. */
int tw__fix_tag_table_sorted(void);
int tw__fix_tag_table_sorted(void)
{
    for (size_t i = 1; i < TW_ARRAY_SIZE(tags); i++)
        if (tags[i - 1].tag >= tags[i].tag)
            return 0;
    return 1;
}

typedef struct val_name {
    uint32_t tag;
    const char *val;
    const char *name;
} val_name;

/* MsgType(35) values are listed under tag 35. */
static const val_name vals[] = {
    { 35, "0", "Heartbeat" }, { 35, "1", "TestRequest" }, { 35, "2", "ResendRequest" },
    { 35, "3", "Reject" }, { 35, "4", "SequenceReset" }, { 35, "5", "Logout" },
    { 35, "6", "IOI" }, { 35, "7", "Advertisement" }, { 35, "8", "ExecutionReport" },
    { 35, "9", "OrderCancelReject" }, { 35, "A", "Logon" }, { 35, "B", "News" },
    { 35, "C", "Email" }, { 35, "D", "NewOrderSingle" }, { 35, "E", "NewOrderList" },
    { 35, "F", "OrderCancelRequest" }, { 35, "G", "OrderCancelReplaceRequest" },
    { 35, "H", "OrderStatusRequest" }, { 35, "J", "AllocationInstruction" },
    { 35, "Q", "DontKnowTrade" }, { 35, "R", "QuoteRequest" }, { 35, "S", "Quote" },
    { 35, "V", "MarketDataRequest" }, { 35, "W", "MarketDataSnapshotFullRefresh" },
    { 35, "X", "MarketDataIncrementalRefresh" }, { 35, "Y", "MarketDataRequestReject" },
    { 35, "Z", "QuoteCancel" }, { 35, "c", "SecurityDefinitionRequest" },
    { 35, "d", "SecurityDefinition" }, { 35, "e", "SecurityStatusRequest" },
    { 35, "f", "SecurityStatus" }, { 35, "j", "BusinessMessageReject" },
    { 35, "q", "OrderMassCancelRequest" }, { 35, "r", "OrderMassCancelReport" },
    { 35, "x", "SecurityListRequest" }, { 35, "y", "SecurityList" },
    { 35, "AE", "TradeCaptureReport" },
    { 54, "1", "Buy" }, { 54, "2", "Sell" }, { 54, "3", "BuyMinus" }, { 54, "4", "SellPlus" },
    { 54, "5", "SellShort" }, { 54, "6", "SellShortExempt" }, { 54, "8", "Cross" },
    { 40, "1", "Market" }, { 40, "2", "Limit" }, { 40, "3", "Stop" }, { 40, "4", "StopLimit" },
    { 40, "P", "Pegged" },
    { 59, "0", "Day" }, { 59, "1", "GoodTillCancel" }, { 59, "2", "AtTheOpening" },
    { 59, "3", "ImmediateOrCancel" }, { 59, "4", "FillOrKill" }, { 59, "6", "GoodTillDate" },
    { 59, "7", "AtTheClose" },
    { 39, "0", "New" }, { 39, "1", "PartiallyFilled" }, { 39, "2", "Filled" },
    { 39, "3", "DoneForDay" }, { 39, "4", "Canceled" }, { 39, "5", "Replaced" },
    { 39, "6", "PendingCancel" }, { 39, "7", "Stopped" }, { 39, "8", "Rejected" },
    { 39, "9", "Suspended" }, { 39, "A", "PendingNew" }, { 39, "C", "Expired" },
    { 39, "E", "PendingReplace" },
    { 150, "0", "New" }, { 150, "1", "PartialFill" }, { 150, "2", "Fill" },
    { 150, "3", "DoneForDay" }, { 150, "4", "Canceled" }, { 150, "5", "Replaced" },
    { 150, "6", "PendingCancel" }, { 150, "8", "Rejected" }, { 150, "A", "PendingNew" },
    { 150, "C", "Expired" }, { 150, "D", "Restated" }, { 150, "E", "PendingReplace" },
    { 150, "F", "Trade" }, { 150, "I", "OrderStatus" },
    { 20, "0", "New" }, { 20, "1", "Cancel" }, { 20, "2", "Correct" }, { 20, "3", "Status" },
    { 21, "1", "AutomatedNoIntervention" }, { 21, "2", "AutomatedIntervention" },
    { 21, "3", "Manual" },
    { 269, "0", "Bid" }, { 269, "1", "Offer" }, { 269, "2", "Trade" },
    { 269, "3", "IndexValue" }, { 269, "4", "OpeningPrice" }, { 269, "5", "ClosingPrice" },
    { 269, "6", "SettlementPrice" }, { 269, "7", "TradingSessionHighPrice" },
    { 269, "8", "TradingSessionLowPrice" }, { 269, "9", "TradingSessionVWAPPrice" },
    { 269, "B", "TradeVolume" }, { 269, "C", "OpenInterest" },
    { 279, "0", "New" }, { 279, "1", "Change" }, { 279, "2", "Delete" },
    { 263, "0", "Snapshot" }, { 263, "1", "SnapshotPlusUpdates" },
    { 263, "2", "DisablePreviousSnapshot" },
    { 265, "0", "FullRefresh" }, { 265, "1", "IncrementalRefresh" },
    { 434, "1", "OrderCancelRequest" }, { 434, "2", "OrderCancelReplaceRequest" },
    { 102, "0", "TooLateToCancel" }, { 102, "1", "UnknownOrder" },
    { 102, "2", "BrokerOption" }, { 102, "3", "AlreadyPendingCancelOrReplace" },
    { 98, "0", "None" },
    { 43, "Y", "Yes" }, { 43, "N", "No" }, { 97, "Y", "Yes" }, { 97, "N", "No" },
    { 123, "Y", "Yes" }, { 123, "N", "No" }, { 141, "Y", "Yes" }, { 141, "N", "No" },
    { 373, "0", "InvalidTagNumber" }, { 373, "1", "RequiredTagMissing" },
    { 373, "2", "TagNotDefinedForThisMessageType" }, { 373, "3", "UndefinedTag" },
    { 373, "4", "TagSpecifiedWithoutAValue" }, { 373, "5", "ValueIsIncorrect" },
    { 373, "6", "IncorrectDataFormatForValue" }, { 373, "7", "DecryptionProblem" },
    { 373, "8", "SignatureProblem" }, { 373, "9", "CompIDProblem" },
    { 373, "10", "SendingTimeAccuracyProblem" }, { 373, "11", "InvalidMsgType" },
    { 373, "12", "XMLValidationError" }, { 373, "13", "TagAppearsMoreThanOnce" },
    { 373, "14", "TagSpecifiedOutOfRequiredOrder" },
    { 373, "15", "RepeatingGroupFieldsOutOfOrder" },
    { 373, "16", "IncorrectNumInGroupCountForRepeatingGroup" },
    { 373, "17", "NonDataValueIncludesFieldDelimiter" }, { 373, "99", "Other" },
};

const char *tw_fix_enum_name(uint32_t tag, const char *v, uint32_t len)
{
    for (size_t i = 0; i < TW_ARRAY_SIZE(vals); i++)
        if (vals[i].tag == tag && strlen(vals[i].val) == len && memcmp(vals[i].val, v, len) == 0)
            return vals[i].name;
    return NULL;
}

const char *tw_fix_msg_type_name(const char *v, uint32_t len)
{
    return tw_fix_enum_name(35, v, len);
}
